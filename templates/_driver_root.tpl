{{- /*
The host's NVIDIA driver root in a pod (docs/internal/DESIGN.md S10.4): "/" read-only as it is; a driver
container's root (e.g. /run/nvidia/driver) through its parent with HostToContainer propagation,
so a root the driver container mounts after the pod started still appears in it. The derived
paths come from the derive_settings hook (internal.settings.driverRoot).
*/ -}}
{{- define "gpu.driverRoot" -}}
{{- $default := dict "root" "/" "hostPath" "/" "mountPath" "/driver-root" "propagation" "None" "driverMount" "/driver-root" -}}
{{- dig "internal" "settings" "driverRoot" $default .Values.gpu | toJson -}}
{{- end }}

{{- define "gpu.driverRoot.volumeMount" -}}
{{- $root := include "gpu.driverRoot" . | fromJson -}}
- name: driver-root
  mountPath: {{ $root.mountPath }}
  readOnly: true
  {{- if eq $root.propagation "HostToContainer" }}
  mountPropagation: HostToContainer
  {{- end }}
{{- end }}

{{- define "gpu.driverRoot.volume" -}}
{{- $root := include "gpu.driverRoot" . | fromJson -}}
- name: driver-root
  hostPath:
    path: {{ $root.hostPath }}
    {{- if eq $root.hostPath "/" }}
    type: Directory
    {{- else }}
    # The driver container may not have created it yet; the pod must start anyway and wait.
    type: DirectoryOrCreate
    {{- end }}
{{- end }}

{{- define "gpu.driverRoot.env" -}}
{{- $root := include "gpu.driverRoot" . | fromJson -}}
- name: NVIDIA_DRIVER_ROOT
  value: {{ $root.root | quote }}
- name: NVIDIA_DRIVER_ROOT_MOUNT
  value: {{ $root.driverMount | quote }}
{{- end }}
