/**
 * NodePool static-drift hash (`karpenter.sh/nodepool-hash`) and its version (`karpenter.sh/nodepool-hash-version`),
 * equal to upstream's: kubernetes-sigs/karpenter v1.14 `pkg/apis/v1/nodepool.go` `NodePool.Hash()` =
 * `hashstructure.Hash(spec.template, FormatV2, {SlicesAsSets, IgnoreZeroValue, ZeroNil})` (`./hashstructure.ts`),
 * over the Go type `NodeClaimTemplate`: its embedded `ObjectMeta` (labels, annotations), then
 * `NodeClaimTemplateSpec` (taints, startupTaints, nodeClassRef, terminationGracePeriod, expireAfter; requirements
 * carry `hash:"ignore"`). NOT hashed: requirements (checked separately), disruption, limits, weight. Taint order
 * does not matter (slices are sets); an absent field equals a zero one, but an empty list (`taints: []`) is not
 * nil in Go and hashes differently from an absent one, as upstream's; `expireAfter: Never` equals absent.
 * A NodeClaim stamped by upstream (version `v3`, Karpenter v1.0 to v1.14) is compared as upstream compares it:
 * the same template gives the same number. Pure: no I/O. The controller that stamps the annotations is
 * `controllers/nodepool/hash.ts`.
 */
import { Never, parseGoDurationNanos } from './duration.ts';
import { type GoType, hashValue } from './hashstructure.ts';
import type { NodePool } from './karpenter.ts';
import { AnnotationNodePoolHash, AnnotationNodePoolHashVersion } from './labels.ts';

/** Current hash version: upstream's `NodePoolHashVersion` (`v3` since Karpenter v1.0, still in v1.14). */
export const NodePoolHashVersion = 'v3';

/** A Go duration string as nanoseconds; throws naming the field and Go's error when it is not one. */
export function durationNanos(v: unknown, where: string): bigint {
  const r = parseGoDurationNanos(String(v));
  if (!r.ok) throw new Error(`${where}: ${r.goError}`);
  return r.nanos;
}

const str: GoType = { kind: 'string' };
const stringMap: GoType = { kind: 'map', key: str, value: str };

/** `metav1.Duration` (k8s.io/apimachinery): a struct `Duration` with one `time.Duration` field, `"1h"` in JSON. */
export const goMetaV1Duration: GoType = {
  kind: 'decode',
  type: {
    kind: 'struct',
    name: 'Duration',
    fields: [{ name: 'Duration', json: 'ns', type: { kind: 'int64' } }],
  },
  decode: (v, where) => ({ ns: durationNanos(v, where) }),
};

/** Karpenter's `NillableDuration` (`pkg/apis/v1/duration.go`): `*time.Duration` embedded, `Raw []byte` ignored. */
const goNillableDuration: GoType = {
  kind: 'decode',
  type: {
    kind: 'struct',
    name: 'NillableDuration',
    fields: [
      { name: 'Duration', json: 'ns', type: { kind: 'ptr', elem: { kind: 'int64' } } },
      { name: 'Raw', json: 'raw', type: { kind: 'slice', elem: { kind: 'int32' } }, tag: 'ignore' },
    ],
  },
  // "Never" leaves both fields nil (UnmarshalJSON returns before setting Raw): the zero value, skipped
  decode: (v, where) => (v === undefined || v === Never ? {} : { ns: durationNanos(v, where), raw: [] }),
};

/**
 * `metav1.Time`: a struct `Time` embedding `time.Time`, which hashstructure hashes as the bytes of
 * `time.MarshalBinary` (version 1, seconds since year 1 and nanoseconds big-endian, then the zone offset in
 * minutes: 0, as `metav1.Time` decodes into the controller's local zone and upstream's image runs in UTC).
 */
const goMetaV1Time: GoType = {
  kind: 'ptr',
  elem: {
    kind: 'decode',
    type: {
      kind: 'struct',
      name: 'Time',
      fields: [{ name: 'Time', json: 'bytes', type: { kind: 'bytes' } }],
    },
    decode: (v, where) => ({ bytes: timeMarshalBinary(String(v), where) }),
  },
};

/** Go's `time.Time.MarshalBinary` of an RFC 3339 text, in a zone at offset 0 (not the UTC location). */
export function timeMarshalBinary(text: string, where: string): Uint8Array {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(text);
  const ms = m ? Date.parse(`${m[1]}${m[3]}`) : Number.NaN;
  if (!m || Number.isNaN(ms)) throw new Error(`${where}: ${JSON.stringify(text)} is not an RFC 3339 time`);
  const sec = BigInt(ms / 1000) + 62135596800n; // seconds from year 1 to 1970
  const nsec = Number((m[2] ?? '').padEnd(9, '0') || '0');
  const out = new Uint8Array(15);
  out[0] = 1;
  for (let i = 0; i < 8; i++) out[1 + i] = Number((sec >> BigInt(8 * (7 - i))) & 0xffn);
  for (let i = 0; i < 4; i++) out[9 + i] = (nsec >>> (8 * (3 - i))) & 0xff;
  return out; // offset minutes 0: bytes 13, 14 stay 0
}

/** `corev1.Taint`: key, value, effect, timeAdded (a `*metav1.Time`; rarely set on a NodePool template). */
const goTaint: GoType = {
  kind: 'struct',
  name: 'Taint',
  fields: [
    { name: 'Key', json: 'key', type: str },
    { name: 'Value', json: 'value', type: str },
    { name: 'Effect', json: 'effect', type: str },
    { name: 'TimeAdded', json: 'timeAdded', type: goMetaV1Time },
  ],
};

/** Upstream's `NodeClaimTemplate` Go type, field for field (kubernetes-sigs/karpenter v1.14 `nodepool.go`). */
export const goNodeClaimTemplate: GoType = {
  kind: 'struct',
  name: 'NodeClaimTemplate',
  fields: [
    {
      name: 'ObjectMeta',
      json: 'metadata',
      type: {
        kind: 'struct',
        name: 'ObjectMeta',
        fields: [
          { name: 'Labels', json: 'labels', type: stringMap },
          { name: 'Annotations', json: 'annotations', type: stringMap },
        ],
      },
    },
    {
      name: 'Spec',
      json: 'spec',
      type: {
        kind: 'struct',
        name: 'NodeClaimTemplateSpec',
        fields: [
          { name: 'Taints', json: 'taints', type: { kind: 'slice', elem: goTaint } },
          { name: 'StartupTaints', json: 'startupTaints', type: { kind: 'slice', elem: goTaint } },
          { name: 'Requirements', json: 'requirements', type: { kind: 'slice', elem: str }, tag: 'ignore' },
          {
            name: 'NodeClassRef',
            json: 'nodeClassRef',
            type: {
              kind: 'ptr',
              elem: {
                kind: 'struct',
                name: 'NodeClassReference',
                fields: [
                  { name: 'Kind', json: 'kind', type: str },
                  { name: 'Name', json: 'name', type: str },
                  { name: 'Group', json: 'group', type: str },
                ],
              },
            },
          },
          {
            name: 'TerminationGracePeriod',
            json: 'terminationGracePeriod',
            type: { kind: 'ptr', elem: goMetaV1Duration },
          },
          { name: 'ExpireAfter', json: 'expireAfter', type: goNillableDuration },
        ],
      },
    },
  ],
};

/**
 * The NodePool's template hash, a decimal string equal to upstream's `NodePool.Hash()`. Pure.
 * @throws Error naming the field when a duration is not a Go duration (validation refuses those earlier).
 */
export function nodePoolHash(nodePool: NodePool): string {
  return hashValue(
    goNodeClaimTemplate,
    nodePool.spec.template,
    `NodePool ${nodePool.metadata.name} spec.template`,
  ).toString(10);
}

/** True when the NodePool's hash annotations are current. */
export function hashIsCurrent(nodePool: NodePool): boolean {
  const a = nodePool.metadata.annotations ?? {};
  return (
    a[AnnotationNodePoolHash] === nodePoolHash(nodePool) &&
    a[AnnotationNodePoolHashVersion] === NodePoolHashVersion
  );
}
