# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A small gRPC server for the kubelet's Unix sockets, over the pure-Python ``h2`` (DESIGN.md F6.5).

It serves what gpu-handler needs and nothing more: unary and server-streaming calls of
uncompressed protobuf messages, on a Unix socket, to the kubelet's grpc-go client. grpcio did the
same with a C core that cost the handler about 10 MiB of memory on every GPU node.
"""
