{{- /*
The few helpers the module needs, written here instead of depending on lib-helm (a chart that
cannot be fetched when the module is built offline). They follow lib-helm's conventions: the same
labels, image references by digest from the values Deckhouse provides, the same security
contexts and priority classes.
*/ -}}

{{- /* Labels of every object: heritage, module and, when given, app. Usage: (list . "app-name") */ -}}
{{- define "gpu.labels" -}}
{{- $ctx := index . 0 -}}
heritage: deckhouse
module: {{ $ctx.Chart.Name }}
{{- if gt (len .) 1 }}
app: {{ index . 1 }}
{{- end }}
{{- end }}

{{- /* Selector labels of a workload. Usage: (list . "app-name") */ -}}
{{- define "gpu.selector" -}}
app: {{ index . 1 }}
{{- end }}

{{- /*
An image of the module, by digest. Deckhouse writes the digests of the images built from
images/<dir> into global.modulesImages.digests.<module>.<camelCasedDir>. The registry is the
module's own (gpu.registry.base) when Deckhouse installed it from a ModuleSource, else the
platform's. A missing digest fails the render: a wrong image must never be deployed.
Usage: (list . "gpuHandler")
*/ -}}
{{- define "gpu.image" -}}
{{- $ctx := index . 0 -}}
{{- $name := index . 1 -}}
{{- $digests := dig "modulesImages" "digests" "gpu" dict $ctx.Values.global -}}
{{- $digest := get $digests $name -}}
{{- if not $digest -}}
{{- fail (printf "no digest for image %q in global.modulesImages.digests.gpu" $name) -}}
{{- end -}}
{{- $base := dig "registry" "base" "" $ctx.Values.gpu | default (dig "modulesImages" "registry" "base" "" $ctx.Values.global) -}}
{{- if not $base -}}
{{- fail "no registry: neither gpu.registry.base nor global.modulesImages.registry.base is set" -}}
{{- end -}}
{{- printf "%s@%s" $base $digest -}}
{{- end }}

{{- /*
An image every Deckhouse module shares (the platform's "common" images, kubeRbacProxy among them),
by digest from global.modulesImages.digests.common, always from the platform's registry: a module
installed from a ModuleSource does not ship it. A missing digest fails the render, as gpu.image.
Usage: (list . "kubeRbacProxy")
*/ -}}
{{- define "gpu.commonImage" -}}
{{- $ctx := index . 0 -}}
{{- $name := index . 1 -}}
{{- $digest := dig "modulesImages" "digests" "common" $name "" $ctx.Values.global -}}
{{- if not $digest -}}
{{- fail (printf "no digest for image %q in global.modulesImages.digests.common" $name) -}}
{{- end -}}
{{- $base := dig "modulesImages" "registry" "base" "" $ctx.Values.global -}}
{{- if not $base -}}
{{- fail "no registry: global.modulesImages.registry.base is not set" -}}
{{- end -}}
{{- printf "%s@%s" $base $digest -}}
{{- end }}

{{- /* Pod security context of an unprivileged component: the "deckhouse" user, never root. */ -}}
{{- define "gpu.podSecurityContext.nonRoot" -}}
runAsNonRoot: true
runAsUser: 64535
runAsGroup: 64535
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- /* Container security context of an unprivileged component: PSS restricted. */ -}}
{{- define "gpu.containerSecurityContext.restricted" -}}
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- /* Every container writes only logs to the node's disk; /tmp is a small emptyDir. */ -}}
{{- define "gpu.ephemeralStorage" -}}
ephemeral-storage: 50Mi
{{- end }}

{{- /* The settings the hooks derived (internal.settings), with the hook's own defaults. */ -}}
{{- define "gpu.logLevel" -}}
{{- dig "internal" "settings" "logLevel" "info" .Values.gpu -}}
{{- end }}

{{- define "gpu.highAvailability" -}}
{{- if dig "internal" "settings" "highAvailability" false .Values.gpu }}true{{ end -}}
{{- end }}

{{- /* Tolerations of node components: they must run wherever GPUs are, tainted or not. */ -}}
{{- define "gpu.tolerations.anyNode" -}}
- operator: Exists
{{- end }}

{{- /* Tolerations of control-plane components (Deployments). */ -}}
{{- define "gpu.tolerations.system" -}}
- key: dedicated.deckhouse.io
  operator: Equal
  value: system
- key: node-role.kubernetes.io/control-plane
  operator: Exists
  effect: NoSchedule
{{- end }}

{{- /*
Node selectors of the components that run only on GPU nodes. The gpu_node_labels hook keeps these
labels on the Nodes (hooks/lib/gpu_node_labels.py says when a node gets them). Never replace them
by a list of node names in the pod template: the template would change whenever a GPU node comes
or goes and roll every pod of the DaemonSet, and a matchFields term on metadata.name accepts only
one value, so the API server rejects a list of two.
*/ -}}
{{- define "gpu.nodeSelector.driverReady" -}}
gpu.deckhouse.io/driver-ready: "true"
{{- end }}

{{- define "gpu.nodeSelector.nvidia" -}}
gpu.deckhouse.io/nvidia: "true"
{{- end }}

{{- /* The standard environment of every component. */ -}}
{{- define "gpu.env.common" -}}
- name: LOG_LEVEL
  value: {{ include "gpu.logLevel" . | quote }}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end }}

{{- define "gpu.env.nodeName" -}}
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
{{- end }}
