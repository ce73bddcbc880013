/**
 * Defaulting and validation of built-in kinds, as the real API server's registry strategies and
 * admission plugins do for the fields capenter and its tools rely on:
 * pod defaults (pkg/apis/core/v1/defaults.go: schedulerName, restartPolicy, dnsPolicy,
 * terminationGracePeriodSeconds, requests defaulted from limits; DefaultTolerationSeconds admission),
 * QoS class, workload defaults (replicas 1, strategies), object-meta and pod validation.
 */
import { parseQuantity } from '../quantity.ts';
import type { StatusCause } from './errors.ts';
import { asArr, asObj, asStr, type Json, type JsonObject, type KObj, type ResourceDef } from './types.ts';

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** Apply defaults to a pod spec (also used for templates). */
export function defaultPodSpec(spec: JsonObject): void {
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;
  for (const field of ['containers', 'initContainers']) {
    for (const c of asArr(spec[field]) ?? []) {
      const co = asObj(c);
      if (!co) continue;
      const image = asStr(co.image) ?? '';
      co.imagePullPolicy ??= image.endsWith(':latest') || !/:[^/]+$/.test(image) ? 'Always' : 'IfNotPresent';
      co.terminationMessagePath ??= '/dev/termination-log';
      co.terminationMessagePolicy ??= 'File';
      const res = asObj(co.resources) ?? {};
      co.resources = res;
      const limits = asObj(res.limits);
      if (limits) {
        const req = asObj(res.requests) ?? {};
        for (const [k, v] of Object.entries(limits)) if (req[k] === undefined && v !== undefined) req[k] = v;
        res.requests = req;
      }
    }
  }
}

/** Pod QoS class from container requests/limits (pkg/apis/core/helper/qos). */
export function podQos(spec: JsonObject): string {
  let anySet = false;
  let guaranteed = true;
  const containers = [...(asArr(spec.containers) ?? []), ...(asArr(spec.initContainers) ?? [])];
  for (const c of containers) {
    const res = asObj(asObj(c)?.resources) ?? {};
    const req = asObj(res.requests) ?? {};
    const lim = asObj(res.limits) ?? {};
    if (Object.keys(req).length > 0 || Object.keys(lim).length > 0) anySet = true;
    for (const r of ['cpu', 'memory']) {
      if (lim[r] === undefined || (req[r] !== undefined && String(req[r]) !== String(lim[r])))
        guaranteed = false;
    }
  }
  if (!anySet) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

function defaultTemplate(spec: JsonObject): void {
  const podSpec = asObj(asObj(spec.template)?.spec);
  if (podSpec) defaultPodSpec(podSpec);
}

/** Kind-specific defaults applied on create (and on update for templates). */
export function applyDefaults(def: ResourceDef, obj: KObj, isCreate: boolean): void {
  if (def.crdName) return;
  const spec = asObj(obj.spec);
  const key = `${def.group}/${def.kind}`;
  switch (key) {
    case '/Pod': {
      if (!spec) return;
      defaultPodSpec(spec);
      spec.priority ??= 0;
      if (isCreate) {
        const tol = asArr(spec.tolerations) ?? [];
        for (const k of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
          const has = tol.some((t) => {
            const to = asObj(t);
            return (
              to &&
              (to.key === k || (to.key === undefined && to.operator === 'Exists')) &&
              (to.effect ?? 'NoExecute') === 'NoExecute'
            );
          });
          if (!has) tol.push({ key: k, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
        }
        spec.tolerations = tol;
      }
      return;
    }
    case '/Namespace': {
      const meta = obj.metadata ?? {};
      meta.labels = { ...(meta.labels ?? {}), 'kubernetes.io/metadata.name': meta.name ?? '' };
      obj.metadata = meta;
      obj.spec = { finalizers: ['kubernetes'], ...(spec ?? {}) };
      return;
    }
    case '/Service': {
      if (!spec) return;
      spec.type ??= 'ClusterIP';
      spec.sessionAffinity ??= 'None';
      return;
    }
    case 'apps/Deployment':
      if (!spec) return;
      spec.replicas ??= 1;
      spec.revisionHistoryLimit ??= 10;
      spec.progressDeadlineSeconds ??= 600;
      spec.strategy ??= { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } };
      defaultTemplate(spec);
      return;
    case 'apps/ReplicaSet':
      if (!spec) return;
      spec.replicas ??= 1;
      defaultTemplate(spec);
      return;
    case 'apps/StatefulSet':
      if (!spec) return;
      spec.replicas ??= 1;
      spec.podManagementPolicy ??= 'OrderedReady';
      spec.updateStrategy ??= { type: 'RollingUpdate', rollingUpdate: { partition: 0 } };
      spec.revisionHistoryLimit ??= 10;
      defaultTemplate(spec);
      return;
    case 'apps/DaemonSet':
      if (!spec) return;
      spec.updateStrategy ??= { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } };
      spec.revisionHistoryLimit ??= 10;
      defaultTemplate(spec);
      return;
    case 'batch/Job':
      if (!spec) return;
      spec.parallelism ??= 1;
      spec.completions ??= spec.completionMode === 'Indexed' ? spec.parallelism : 1;
      spec.backoffLimit ??= 6;
      spec.completionMode ??= 'NonIndexed';
      spec.suspend ??= false;
      defaultTemplate(spec);
      return;
    case 'storage.k8s.io/StorageClass':
      obj.reclaimPolicy ??= 'Delete';
      obj.volumeBindingMode ??= 'Immediate';
      return;
  }
}

/** Status an object starts with when its kind resets status on create. */
export function initialStatus(def: ResourceDef, obj: KObj): Json | undefined {
  if (def.crdName) return undefined;
  switch (`${def.group}/${def.kind}`) {
    case '/Pod':
      return { phase: 'Pending', qosClass: podQos(asObj(obj.spec) ?? {}) };
    case '/Namespace':
      return { phase: 'Active' };
    case '/PersistentVolumeClaim':
    case '/PersistentVolume':
      return { phase: 'Pending' };
    case '/Service':
      return { loadBalancer: {} };
    case 'policy/PodDisruptionBudget':
      return { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 };
    default:
      return def.kind === 'CustomResourceDefinition' ? undefined : {};
  }
}

function checkName(name: string, label: boolean, field: string, causes: StatusCause[]): void {
  const re = label ? DNS1123_LABEL : DNS1123_SUBDOMAIN;
  const max = label ? 63 : 253;
  if (name.length > max || !re.test(name)) {
    causes.push({
      reason: 'FieldValueInvalid',
      field,
      message: label
        ? `Invalid value: "${name}": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
        : `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    });
  }
}

/** Validate `metadata` (name, labels) — apimachinery ValidateObjectMeta. */
export function validateMeta(def: ResourceDef, obj: KObj): StatusCause[] {
  const causes: StatusCause[] = [];
  const meta = obj.metadata ?? {};
  if (meta.name !== undefined && typeof meta.name !== 'string')
    return [
      {
        reason: 'FieldValueInvalid',
        field: 'metadata.name',
        message: `Invalid value: ${JSON.stringify(meta.name)}: must be a string`,
      },
    ];
  const name = meta.name ?? '';
  if (!name)
    causes.push({
      reason: 'FieldValueRequired',
      field: 'metadata.name',
      message: 'Required value: name or generateName is required',
    });
  else checkName(name, def.kind === 'Namespace' && !def.crdName, 'metadata.name', causes);
  const labels = asObj(meta.labels);
  if (meta.labels !== undefined && (labels === undefined || Array.isArray(meta.labels)))
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'metadata.labels',
      message: 'Invalid value: labels must be a map of strings',
    });
  for (const [k, v] of Object.entries(labels ?? {})) {
    const [prefix, local] = k.includes('/')
      ? [k.slice(0, k.indexOf('/')), k.slice(k.indexOf('/') + 1)]
      : [undefined, k];
    if (typeof v !== 'string')
      causes.push({
        reason: 'FieldValueInvalid',
        field: `metadata.labels`,
        message: `Invalid value: label "${k}" must have a string value`,
      });
    else if (v.length > 63 || !LABEL_VALUE.test(v))
      causes.push({
        reason: 'FieldValueInvalid',
        field: 'metadata.labels',
        message: `Invalid value: "${v}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
      });
    if (
      local.length > 63 ||
      !QUALIFIED_NAME.test(local) ||
      (prefix !== undefined && (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)))
    )
      causes.push({
        reason: 'FieldValueInvalid',
        field: 'metadata.labels',
        message: `Invalid value: "${k}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
      });
  }
  const ann = meta.annotations;
  if (
    ann !== undefined &&
    (asObj(ann) === undefined || Object.values(asObj(ann)!).some((v) => typeof v !== 'string'))
  )
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'metadata.annotations',
      message: 'Invalid value: annotations must be a map of strings',
    });
  // apimachinery ValidateAnnotations: the keys and values together at most 256 KiB
  const annObj = asObj(ann);
  if (annObj) {
    let size = 0;
    for (const [k, v] of Object.entries(annObj)) size += k.length + (typeof v === 'string' ? v.length : 0);
    if (size > TOTAL_ANNOTATION_SIZE_LIMIT_B)
      causes.push({
        reason: 'FieldValueTooLong',
        field: 'metadata.annotations',
        message: `Too long: may not be more than ${TOTAL_ANNOTATION_SIZE_LIMIT_B} bytes`,
      });
  }
  if (
    meta.finalizers !== undefined &&
    (!Array.isArray(meta.finalizers) || meta.finalizers.some((f) => typeof f !== 'string'))
  )
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'metadata.finalizers',
      message: 'Invalid value: finalizers must be a list of strings',
    });
  return causes;
}

function validateContainers(spec: JsonObject, base: string, causes: StatusCause[]): void {
  const containers = asArr(spec.containers);
  if (!containers || containers.length === 0) {
    causes.push({ reason: 'FieldValueRequired', field: `${base}.containers`, message: 'Required value' });
    return;
  }
  const names = new Set<string>();
  containers.forEach((c, i) => {
    const co = asObj(c);
    const f = `${base}.containers[${i}]`;
    if (!co) {
      causes.push({ reason: 'FieldValueInvalid', field: f, message: 'Invalid value: must be an object' });
      return;
    }
    const n = asStr(co.name);
    if (!n) causes.push({ reason: 'FieldValueRequired', field: `${f}.name`, message: 'Required value' });
    else if (names.has(n))
      causes.push({ reason: 'FieldValueDuplicate', field: `${f}.name`, message: `Duplicate value: "${n}"` });
    else names.add(n);
    if (!asStr(co.image))
      causes.push({ reason: 'FieldValueRequired', field: `${f}.image`, message: 'Required value' });
    const res = asObj(co.resources);
    for (const part of ['requests', 'limits'] as const)
      for (const [name, v] of Object.entries(asObj(res?.[part]) ?? {})) {
        const field = `${f}.resources.${part}[${name}]`;
        let q: number | undefined;
        try {
          q = typeof v === 'string' || typeof v === 'number' ? parseQuantity(v) : undefined;
        } catch {
          q = undefined;
        }
        if (q === undefined)
          causes.push({
            reason: 'FieldValueInvalid',
            field,
            message: `Invalid value: ${JSON.stringify(v)}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
          });
        else if (q < 0)
          causes.push({
            reason: 'FieldValueInvalid',
            field,
            message: `Invalid value: ${JSON.stringify(v)}: must be greater than or equal to 0`,
          });
      }
  });
  validatePodSelectors(spec, base, causes);
}

const SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

/** Label selectors of pod (anti-)affinity terms and topology spread constraints: operators and values. */
function validatePodSelectors(spec: JsonObject, base: string, causes: StatusCause[]): void {
  const check = (sel: unknown, field: string) => {
    asArr(asObj(sel)?.matchExpressions)?.forEach((e, i) => {
      const op = asObj(e)?.operator;
      const f = `${field}.matchExpressions[${i}].operator`;
      if (typeof op !== 'string' || !SELECTOR_OPERATORS.includes(op))
        causes.push({
          reason: 'FieldValueInvalid',
          field: f,
          message: `Invalid value: ${JSON.stringify(op)}: not a valid selector operator`,
        });
    });
  };
  const affinity = asObj(spec.affinity);
  for (const kind of ['podAffinity', 'podAntiAffinity'] as const) {
    const a = asObj(affinity?.[kind]);
    for (const [i, term] of (asArr(a?.requiredDuringSchedulingIgnoredDuringExecution) ?? []).entries())
      check(
        asObj(term)?.labelSelector,
        `${base}.affinity.${kind}.requiredDuringSchedulingIgnoredDuringExecution[${i}].labelSelector`,
      );
    for (const [i, w] of (asArr(a?.preferredDuringSchedulingIgnoredDuringExecution) ?? []).entries())
      check(
        asObj(asObj(w)?.podAffinityTerm)?.labelSelector,
        `${base}.affinity.${kind}.preferredDuringSchedulingIgnoredDuringExecution[${i}].podAffinityTerm.labelSelector`,
      );
  }
  for (const [i, c] of (asArr(spec.topologySpreadConstraints) ?? []).entries())
    check(asObj(c)?.labelSelector, `${base}.topologySpreadConstraints[${i}].labelSelector`);
}

/** apimachinery `TotalAnnotationSizeLimitB`: 256 KiB. */
export const TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * 1024;

/** Validate kind-specific required fields of built-ins (subset of pkg/apis/<group>/validation). */
export function validateBuiltin(def: ResourceDef, obj: KObj): StatusCause[] {
  if (def.crdName) return [];
  const causes: StatusCause[] = [];
  const spec = asObj(obj.spec);
  switch (`${def.group}/${def.kind}`) {
    case '/Pod':
      if (!spec) causes.push({ reason: 'FieldValueRequired', field: 'spec', message: 'Required value' });
      else validateContainers(spec, 'spec', causes);
      break;
    case 'apps/Deployment':
    case 'apps/ReplicaSet':
    case 'apps/StatefulSet':
    case 'apps/DaemonSet': {
      if (!spec) {
        causes.push({ reason: 'FieldValueRequired', field: 'spec', message: 'Required value' });
        break;
      }
      const sel = asObj(spec.selector);
      if (!sel)
        causes.push({ reason: 'FieldValueRequired', field: 'spec.selector', message: 'Required value' });
      const tmpl = asObj(spec.template);
      const tspec = asObj(tmpl?.spec);
      if (!tspec)
        causes.push({ reason: 'FieldValueRequired', field: 'spec.template.spec', message: 'Required value' });
      else validateContainers(tspec, 'spec.template.spec', causes);
      const tl = (asObj(asObj(tmpl?.metadata)?.labels) ?? {}) as Record<string, string>;
      const ml = asObj(sel?.matchLabels) ?? {};
      if (sel && Object.entries(ml).some(([k, v]) => tl[k] !== v))
        causes.push({
          reason: 'FieldValueInvalid',
          field: 'spec.template.metadata.labels',
          message: `Invalid value: ${JSON.stringify(tl)}: \`selector\` does not match template \`labels\``,
        });
      const r = spec.replicas;
      if (r !== undefined && (typeof r !== 'number' || !Number.isInteger(r) || r < 0))
        causes.push({
          reason: 'FieldValueInvalid',
          field: 'spec.replicas',
          message: `Invalid value: ${JSON.stringify(r)}: must be greater than or equal to 0`,
        });
      break;
    }
    case 'batch/Job': {
      const tspec = asObj(asObj(spec?.template)?.spec);
      if (!tspec)
        causes.push({ reason: 'FieldValueRequired', field: 'spec.template.spec', message: 'Required value' });
      else validateContainers(tspec, 'spec.template.spec', causes);
      break;
    }
    case 'policy/PodDisruptionBudget':
      if (spec && spec.minAvailable !== undefined && spec.maxUnavailable !== undefined)
        causes.push({
          reason: 'FieldValueInvalid',
          field: 'spec',
          message: 'Invalid value: minAvailable and maxUnavailable cannot be both set',
        });
      for (const f of ['minAvailable', 'maxUnavailable']) {
        const v = spec?.[f];
        if (v === undefined) continue;
        if (
          !(
            (typeof v === 'number' && Number.isInteger(v) && v >= 0) ||
            (typeof v === 'string' && /^\d+%$/.test(v))
          )
        )
          causes.push({
            reason: 'FieldValueInvalid',
            field: `spec.${f}`,
            message: `Invalid value: ${JSON.stringify(v)}: must be a non-negative integer or a percentage`,
          });
      }
      break;
    case '/ConfigMap':
    case '/Secret':
      for (const f of ['data', 'stringData', 'binaryData']) {
        const v = obj[f];
        if (
          v !== undefined &&
          v !== null &&
          (asObj(v) === undefined || Object.values(asObj(v)!).some((x) => typeof x !== 'string'))
        )
          causes.push({
            reason: 'FieldValueInvalid',
            field: f,
            message: 'Invalid value: must be a map of strings',
          });
      }
      break;
  }
  return causes;
}

const POD_MUTABLE_MESSAGE =
  'Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

function neutralizePodSpec(spec: JsonObject | undefined): JsonObject {
  const s: JsonObject = JSON.parse(JSON.stringify(spec ?? {}));
  for (const f of ['containers', 'initContainers'])
    for (const c of asArr(s[f]) ?? []) if (asObj(c)) delete asObj(c)!.image;
  delete s.activeDeadlineSeconds;
  delete s.tolerations;
  delete s.terminationGracePeriodSeconds;
  delete s.schedulingGates;
  return s;
}

/** Pod spec immutability on update (pkg/apis/core/validation ValidatePodUpdate, simplified). */
export function validatePodUpdate(
  oldSpec: JsonObject | undefined,
  newSpec: JsonObject | undefined,
): StatusCause[] {
  const a = JSON.stringify(sortKeys(neutralizePodSpec(oldSpec)));
  const b = JSON.stringify(sortKeys(neutralizePodSpec(newSpec)));
  return a === b ? [] : [{ reason: 'FieldValueForbidden', field: 'spec', message: POD_MUTABLE_MESSAGE }];
}

function sortKeys(v: Json): Json {
  if (Array.isArray(v)) return v.map(sortKeys);
  const o = asObj(v);
  if (!o) return v;
  const out: JsonObject = {};
  for (const k of Object.keys(o).sort()) if (o[k] !== undefined) out[k] = sortKeys(o[k]!);
  return out;
}
