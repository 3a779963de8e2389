// Copyright (c) 2026 Flant JSC
// SPDX-License-Identifier: Apache-2.0

// A gRPC client on grpc-go, the kubelet's gRPC implementation, for the tests of gpu-handler's own
// server (tests/adapters/test_kubelet_grpc_go.py). It dials a Unix socket as the kubelet does and
// makes one call with the message bytes it is given, so the tests keep the protobuf side in Python.
// tools/fetch-grpc-go builds it into .tools/grpc-go-kubelet.
//
//	grpc-go-kubelet unary  <socket> <full method> <request hex>
//	    prints "ok <response hex>" or "status <code> <message>"
//	grpc-go-kubelet stream <socket> <full method> <request hex> <messages>
//	    prints "msg <hex>" per message, then "cancelled" after that many (it hangs up),
//	    or "eof" / "status <code> <message>" if the stream ends first
package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// rawCodec passes message bytes through: the caller encodes and decodes them.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) { return *(v.(*[]byte)), nil }

func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(2)
}

func printStatus(err error) {
	s := status.Convert(err)
	fmt.Printf("status %d %s\n", s.Code(), s.Message())
}

func main() {
	if len(os.Args) < 5 {
		fail("usage: grpc-go-kubelet unary|stream <socket> <method> <request hex> [messages]")
	}
	mode, socket, method := os.Args[1], os.Args[2], os.Args[3]
	request, err := hex.DecodeString(os.Args[4])
	if err != nil {
		fail("request: %v", err)
	}
	// The kubelet's own deadline for a DRA call.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, "passthrough:///kubelet", grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}))
	if err != nil {
		fail("dial %s: %v", socket, err)
	}
	defer conn.Close()
	codec := grpc.ForceCodec(rawCodec{})
	switch mode {
	case "unary":
		var response []byte
		if err := conn.Invoke(ctx, method, &request, &response, codec); err != nil {
			printStatus(err)
			return
		}
		fmt.Printf("ok %s\n", hex.EncodeToString(response))
	case "stream":
		if len(os.Args) < 6 {
			fail("stream needs the number of messages to read")
		}
		count, err := strconv.Atoi(os.Args[5])
		if err != nil {
			fail("messages: %v", err)
		}
		stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method, codec)
		if err != nil {
			fail("stream: %v", err)
		}
		if err := stream.SendMsg(&request); err != nil {
			fail("send: %v", err)
		}
		if err := stream.CloseSend(); err != nil {
			fail("close send: %v", err)
		}
		for i := 0; i < count; i++ {
			var message []byte
			if err := stream.RecvMsg(&message); err != nil {
				if err == io.EOF {
					fmt.Println("eof")
				} else {
					printStatus(err)
				}
				return
			}
			fmt.Printf("msg %s\n", hex.EncodeToString(message))
		}
		cancel() // the kubelet hanging up: RST_STREAM CANCEL
		fmt.Println("cancelled")
	default:
		fail("unknown mode %q", mode)
	}
}
