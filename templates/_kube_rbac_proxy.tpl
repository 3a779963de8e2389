{{- /*
The kube-rbac-proxy sidecar in front of a component's /metrics, the way Deckhouse modules serve
metrics. The component listens for /metrics on 127.0.0.1 only (its --metrics-address) and keeps
/healthz and /readyz on the pod's address for the kubelet; the sidecar listens on the pod's
address over HTTPS (port https-metrics, a self-signed certificate) and passes a scrape on only
when the caller's token is valid (a TokenReview) and the caller may `get` the workload's
prometheus-metrics subresource (a SubjectAccessReview). templates/rbac-to-us.yaml grants that to
Deckhouse's Prometheus; each component's ServiceAccount is bound to the platform's d8:rbac-proxy
ClusterRole so the sidecar may create the reviews. Some series name the claims and Pods using a
node's GPUs (gpu-handler's d8_gpu_handler_prepared_device_info), so nobody else reads them.

Usage: include "gpu.kubeRbacProxy" (dict "ctx" . "workload" "gpu-handler" "resource" "daemonsets" "upstreamPort" 9082)
*/ -}}
{{- define "gpu.kubeRbacProxy" -}}
{{- $ctx := .ctx -}}
- name: kube-rbac-proxy
  image: {{ include "gpu.commonImage" (list $ctx "kubeRbacProxy") }}
  imagePullPolicy: IfNotPresent
  args:
    - --secure-listen-address=$(KUBE_RBAC_PROXY_LISTEN_ADDRESS):{{ include "gpu.kubeRbacProxy.port" $ctx }}
    - --v=2
    - --logtostderr=true
    # Scrapes go on with the last answers for this long while the API server is unreachable.
    - --stale-cache-interval=1h30m
    # Served without a token, for the probes below.
    - --livez-path=/livez
  env:
    - name: KUBE_RBAC_PROXY_LISTEN_ADDRESS
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: KUBE_RBAC_PROXY_CONFIG
      value: |
        upstreams:
          - upstream: http://127.0.0.1:{{ .upstreamPort }}/metrics
            path: /metrics
            authorization:
              resourceAttributes:
                namespace: d8-{{ $ctx.Chart.Name }}
                apiGroup: apps
                apiVersion: v1
                resource: {{ .resource }}
                subresource: prometheus-metrics
                name: {{ .workload }}
  ports:
    - name: https-metrics
      containerPort: {{ include "gpu.kubeRbacProxy.port" $ctx }}
  livenessProbe:
    httpGet:
      path: /livez
      port: https-metrics
      scheme: HTTPS
    periodSeconds: 20
    failureThreshold: 3
  readinessProbe:
    httpGet:
      path: /livez
      port: https-metrics
      scheme: HTTPS
    periodSeconds: 10
  # Unprivileged and never root, also in gpu-handler's privileged root pod.
  securityContext:
    runAsNonRoot: true
    runAsUser: 64535
    runAsGroup: 64535
    {{- include "gpu.containerSecurityContext.restricted" $ctx | nindent 4 }}
  # lib-helm's helm_lib_container_kube_rbac_proxy_resources; the VPA may raise them (templates/vpa.yaml).
  resources:
    requests:
      cpu: 10m
      memory: 25Mi
      {{- include "gpu.ephemeralStorage" $ctx | nindent 6 }}
    limits:
      memory: 64Mi
{{- end }}

{{- /* The sidecar's HTTPS port in every pod (no pod of the module uses the host's network). */ -}}
{{- define "gpu.kubeRbacProxy.port" -}}
8443
{{- end }}

{{- /* The VPA bounds of the sidecar: lib-helm's helm_lib_vpa_kube_rbac_proxy_resources. */ -}}
{{- define "gpu.kubeRbacProxy.vpaBounds" -}}
{{- toJson (dict "minCpu" "10m" "maxCpu" "25m" "minMemory" "25Mi" "maxMemory" "64Mi") -}}
{{- end }}
