/**
 * zod 4 schemas for capenter's custom resources, mirroring upstream's CRDs field by field:
 * `karpenter.sh/v1` NodePool and NodeClaim, `karpenter.k8s.aws/v1` EC2NodeClass and
 * `karpenter.kwok.sh/v1alpha1` KWOKNodeClass.
 *
 * One source of truth: `validateObject` (validation.ts) parses with these schemas, and `generateCRDs`
 * (crds.ts) turns the same schemas into the CRDs' openAPIV3Schema. Upstream's CEL rules
 * (`x-kubernetes-validations`) are attached as metadata (copied into the CRD) *and* implemented as zod
 * refinements, so a manifest is judged the same way by `capenter simulate` and by an API server.
 * Rules that upstream checks at runtime (NodePool `RuntimeValidate`, e.g. restricted label domains and
 * duplicate taints) are refinements only.
 *
 * Sources: shared/data/crds/karpenter/karpenter.sh_{nodepools,nodeclaims}.yaml and
 * karpenter.kwok.sh_kwoknodeclasses.yaml (kubernetes-sigs/karpenter v1.14.1),
 * shared/data/crds/karpenter-provider-aws/karpenter.k8s.aws_ec2nodeclasses.yaml and the
 * `karpenter.k8s.aws` label-domain rule of its karpenter.sh_nodepools.yaml (aws/karpenter-provider-aws
 * v1.14.1), kubernetes-sigs/karpenter `pkg/apis/v1/labels.go` + `nodeclaim_validation.go`.
 */
import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';
import {
  DefaultBudgetNodes,
  DefaultConsolidateAfter,
  DefaultConsolidationPolicy,
  DefaultExpireAfter,
  DefaultMetadataOptions,
  DefaultReservationState,
  DefaultReservationType,
  defaultBudgets,
  defaultKWOKStatus,
} from './defaults.ts';
import {
  isRestrictedLabel,
  LabelCapacityType,
  LabelHostname,
  LabelNodePool,
  WellKnownLabels,
  wellKnownValuesProblem,
} from './labels.ts';

// ---------------------------------------------------------------------------------------------------
// Issue plumbing
// ---------------------------------------------------------------------------------------------------

/**
 * Kubernetes field error types (k8s.io/apimachinery `field.ErrorType`), used as `ValidationIssue.code`.
 */
export type IssueCode =
  | 'FieldValueRequired'
  | 'FieldValueNotSupported'
  | 'FieldValueInvalid'
  | 'FieldValueTypeInvalid'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'FieldValueDuplicate';

/** A CEL validation rule as written into a CRD's `x-kubernetes-validations`. */
export interface CelRule {
  rule: string;
  message: string;
}

/** Parameters carried by issues raised from rule checks (read back by `validation.ts`). */
export interface RuleIssueParams {
  capenter: true;
  code: IssueCode;
  rule: string;
  /** The offending value, shown in the message when `hasValue`. */
  value?: unknown;
  hasValue: boolean;
}

/** Reporter handed to rule checks. `path` is relative to the schema the rule is attached to. */
export interface RuleContext {
  fail(
    rule: string,
    message: string,
    opts?: { path?: Array<string | number>; code?: IssueCode; value?: unknown },
  ): void;
}

type Check = (value: unknown, ctx: RuleContext) => void;

/**
 * Attaches CEL rules (copied into the CRD as `x-kubernetes-validations`) and a check implementing them
 * (and any runtime-only rules) to a schema. The check always runs, even when the value has other issues,
 * so it must read its input defensively.
 */
export function withRules<S extends z.ZodType>(schema: S, cel: CelRule[], check?: Check): S {
  let out = schema;
  if (check) {
    out = out.superRefine(
      (value, zctx) => {
        check(value, {
          fail(rule, message, opts = {}) {
            const params: RuleIssueParams = {
              capenter: true,
              code: opts.code ?? 'FieldValueInvalid',
              rule,
              hasValue: 'value' in opts,
              value: opts.value,
            };
            zctx.addIssue({ code: 'custom', message, path: opts.path ?? [], params, input: value });
          },
        });
      },
      { when: () => true },
    ) as S;
  }
  if (cel.length > 0) {
    const prev = (z.globalRegistry.get(out)?.['x-kubernetes-validations'] as CelRule[] | undefined) ?? [];
    out = out.meta({ 'x-kubernetes-validations': [...prev, ...cel] }) as S;
  }
  return out;
}

/** A CEL rule with the same check in TypeScript; `failPath` picks the field the issue points at. */
function cel(
  rule: string,
  message: string,
  ok: (v: unknown) => boolean,
  opts: { code?: IssueCode; withValue?: boolean } = {},
): { rule: CelRule; check: Check } {
  return {
    rule: { rule, message },
    check: (v, ctx) => {
      if (!ok(v)) {
        ctx.fail(rule, message, {
          ...(opts.code ? { code: opts.code } : {}),
          ...(opts.withValue ? { value: v } : {}),
        });
      }
    },
  };
}

/** Combines several `cel()` rules on one schema. */
function celAll<S extends z.ZodType>(schema: S, rules: Array<{ rule: CelRule; check: Check }>): S {
  return withRules(
    schema,
    rules.map((r) => r.rule),
    (v, ctx) => {
      for (const r of rules) r.check(v, ctx);
    },
  );
}

/** CRD-only rules that compare with the previous object (`oldSelf`); they cannot run on a single object. */
function transitionRules<S extends z.ZodType>(schema: S, rules: CelRule[]): S {
  return withRules(schema, rules);
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (v: unknown, k: string): boolean => isObj(v) && v[k] !== undefined;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

// ---------------------------------------------------------------------------------------------------
// Patterns (upstream CRD patterns, with a human hint used in error messages)
// ---------------------------------------------------------------------------------------------------

/** Upstream regular expressions, verbatim from the CRDs. */
export const Patterns = {
  quantity:
    /^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/,
  durationOrNever: /^(([0-9]+(s|m|h))+|Never)$/,
  duration: /^([0-9]+(s|m|h))+$/,
  budgetDuration: /^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$/,
  budgetNodes: /^((100|[0-9]{1,2})%|[0-9]+)$/,
  schedule: /^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$/,
  qualifiedName:
    /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/,
  labelValue: /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/,
  conditionReason: /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/,
  conditionReasonOrEmpty: /^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$/,
  conditionType:
    /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/,
  groupName: /^[^/]*$/,
  eviction:
    /^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$/,
  volumeSize:
    /^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$/,
  amiID: /ami-[0-9a-z]+/,
  subnetID: /subnet-[0-9a-z]+/,
  securityGroupID: /sg-[0-9a-z]+/,
  capacityReservationID: /^cr-[0-9a-z]+$/,
  accountID: /^[0-9]{12}$/,
  placementGroupID: /^pg-[0-9a-z]+$/,
  dnsSubdomain: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
} as const;

/** A string matching `re`; `hint` explains the expected shape in error messages. */
function pattern(re: RegExp, hint: string) {
  return z.string().regex(re, { error: hint });
}

const Hints = {
  durationOrNever:
    'must be a duration in hours, minutes and seconds like "720h", "1h30m" or "30s", or "Never"',
  duration: 'must be a duration in hours, minutes and seconds like "720h", "1h30m" or "30s"',
  budgetDuration: 'must be a duration in hours and minutes like "8h", "30m" or "1h30m"',
  budgetNodes: 'must be a node count like "5" or a percentage from "0%" to "100%"',
  schedule: 'must be a cron schedule with five fields like "0 9 * * mon-fri", or @daily, @hourly, ...',
  qualifiedName: 'must be a qualified name like "example.com/my-key" or "my-key"',
  labelValue:
    'must be empty or consist of alphanumeric characters, "-", "_" or ".", starting and ending with an alphanumeric character',
  quantity: 'must be a quantity like "500m", "2", "16Gi"',
  groupName: 'must be an API group without a version, like "karpenter.k8s.aws"',
  dateTime: 'must be an RFC 3339 date-time like "2024-01-01T00:00:00Z"',
  conditionReason: 'must be a CamelCase reason like "NodeClassReady"',
  conditionType: 'must be a CamelCase condition type like "Ready"',
  eviction: 'must be a percentage like "10%" or a quantity like "100Mi"',
  volumeSize: 'must be a size from "1Gi" to "59000Gi" (or G/Ti/T), like "20Gi"',
  dnsSubdomain: 'must be a lowercase RFC 1123 subdomain like "default" or "general-purpose"',
} as const;

// ---------------------------------------------------------------------------------------------------
// Shared building blocks
// ---------------------------------------------------------------------------------------------------

/** `resource.Quantity`: an integer or a quantity string (`x-kubernetes-int-or-string`). */
export const QuantitySchema = z
  .union(
    [
      z.int(),
      pattern(Patterns.quantity, `must be an integer or a quantity string like "500m", "2" or "16Gi"`),
    ],
    {
      error: `must be an integer or a quantity string like "500m", "2" or "16Gi"`,
    },
  )
  .meta({ 'x-kubernetes-int-or-string': true });

/** A resource list (`{cpu: "4", memory: "16Gi"}`). */
export const ResourceListSchema = z.record(z.string(), QuantitySchema);

const dateTime = () => z.iso.datetime({ offset: true, error: Hints.dateTime });

/** `metav1.Condition` as upstream's status conditions (NodeClaim allows empty reason and message). */
function conditionSchema(relaxed: boolean) {
  return z.strictObject({
    lastTransitionTime: dateTime(),
    message: relaxed ? z.string().max(32768).optional() : z.string().max(32768),
    observedGeneration: z.int().min(0).optional(),
    reason: relaxed
      ? pattern(Patterns.conditionReasonOrEmpty, Hints.conditionReason).max(1024).optional()
      : pattern(Patterns.conditionReason, Hints.conditionReason).min(1).max(1024),
    status: z.enum(['True', 'False', 'Unknown']),
    type: pattern(Patterns.conditionType, Hints.conditionType).max(316),
  });
}

/**
 * `status.conditions` (metav1.Condition list); `relaxed` makes `reason`, `message` and the transition time optional,
 * `mapByType` adds upstream's `x-kubernetes-list-type: map` keyed by `type`. Also for a provider module's own
 * NodeClass `status` (`ProviderNodeClassKind.api`).
 */
export function conditionsSchema(relaxed: boolean, mapByType: boolean) {
  const list = z.array(conditionSchema(relaxed));
  if (!mapByType) return list;
  return withRules(list, [], (v, ctx) => {
    const seen = new Set<string>();
    arr(v).forEach((c, i) => {
      const t = isObj(c) ? str(c.type) : undefined;
      if (t === undefined) return;
      if (seen.has(t)) {
        ctx.fail('x-kubernetes-list-type: map (key: type)', `duplicate condition type "${t}"`, {
          path: [i, 'type'],
          code: 'FieldValueDuplicate',
          value: t,
        });
      }
      seen.add(t);
    });
  }).meta({ 'x-kubernetes-list-map-keys': ['type'], 'x-kubernetes-list-type': 'map' });
}

function labelValueSchema() {
  return pattern(Patterns.labelValue, Hints.labelValue).max(63);
}

/** Label domain (the part before `/`), `""` when the key has no prefix. */
export function labelDomain(key: string): string {
  const i = key.indexOf('/');
  return i < 0 ? '' : key.slice(0, i);
}

/** Deprecated label keys upstream normalizes before checking restrictions (upstream `NormalizedLabels`). */
export const NormalizedLabels: Readonly<Record<string, string>> = {
  'failure-domain.beta.kubernetes.io/zone': 'topology.kubernetes.io/zone',
  'beta.kubernetes.io/arch': 'kubernetes.io/arch',
  'beta.kubernetes.io/os': 'kubernetes.io/os',
  'beta.kubernetes.io/instance-type': 'node.kubernetes.io/instance-type',
  'failure-domain.beta.kubernetes.io/region': 'topology.kubernetes.io/region',
};

/**
 * Keys allowed in the `karpenter.k8s.aws` label domain (aws/karpenter-provider-aws v1.14.1 CRD rule
 * `label domain "karpenter.k8s.aws" is restricted`).
 */
export const AWSAllowedLabels: ReadonlySet<string> = new Set(
  [
    'instance-tenancy',
    'capacity-reservation-type',
    'capacity-reservation-id',
    'capacity-reservation-interruptible',
    'ec2nodeclass',
    'instance-encryption-in-transit-supported',
    'instance-category',
    'instance-hypervisor',
    'instance-family',
    'instance-generation',
    'instance-local-nvme',
    'instance-size',
    'instance-cpu',
    'instance-cpu-manufacturer',
    'instance-cpu-sustained-clock-speed-mhz',
    'instance-memory',
    'instance-ebs-bandwidth',
    'instance-network-bandwidth',
    'instance-gpu-name',
    'instance-gpu-manufacturer',
    'instance-gpu-count',
    'instance-gpu-memory',
    'instance-accelerator-name',
    'instance-accelerator-manufacturer',
    'instance-accelerator-count',
    'instance-capability-flex',
    'placement-group-id',
    'placement-group-partition',
  ].map((k) => `karpenter.k8s.aws/${k}`),
);

/**
 * The `karpenter.k8s.aws` labels capenter's aws provider sets that a NodePool may use (well-known, so not
 * `ec2nodeclass`, which upstream's `IsRestrictedLabel` refuses), short names, for the fix of the messages below.
 */
const awsSupportedShort = [...AWSAllowedLabels]
  .filter((k) => WellKnownLabels.has(k))
  .map((k) => k.slice('karpenter.k8s.aws/'.length))
  .sort();

/**
 * The message for a `karpenter.k8s.aws` key capenter does not set: upstream's CRD message (`label domain
 * "karpenter.k8s.aws" is restricted`) for keys outside {@link AWSAllowedLabels}, then what to use instead.
 */
function awsLabelMessage(key: string): string {
  const fix =
    `use a label the aws provider sets (karpenter.k8s.aws/{${awsSupportedShort.join(',')}}, ` +
    `topology.k8s.aws/zone-id) or a custom label outside karpenter.k8s.aws`;
  return `${LabelRules.awsDomain.message}: "${key}" is not a label the aws provider sets; ${fix}`;
}

const celList = (keys: Iterable<string>) => `[${[...keys].map((k) => `"${k}"`).join(', ')}]`;

/**
 * Returns the first label rule that `key` breaks, or undefined when it may be used. Upstream's CEL rules come first
 * (`kubernetes.io/hostname`, `karpenter.sh/nodepool` unless `allowNodePool`, the `karpenter.sh` and
 * `karpenter.k8s.aws` domains),
 * then, when `runtime` (a NodePool's `RuntimeValidate`; upstream runs none for NodeClaims), upstream's
 * `IsRestrictedLabel` ({@link isRestrictedLabel}, rule `IsRestrictedLabel`) on the key, normalized first for a
 * requirement (`normalize`, upstream `ValidateRequirement`). `kubernetes.io`, `k8s.io` and their subdomains are
 * allowed, as upstream v1.14.
 */
export function restrictedLabelRule(
  rawKey: string,
  opts: { allowNodePool: boolean; normalize: boolean; runtime: boolean },
): CelRule | undefined {
  if (rawKey === LabelHostname) return LabelRules.hostname;
  if (rawKey === LabelNodePool && !opts.allowNodePool) return LabelRules.nodepool;
  const domain = labelDomain(rawKey);
  if (domain.endsWith('karpenter.sh') && rawKey !== LabelCapacityType && rawKey !== LabelNodePool) {
    return LabelRules.karpenterDomain;
  }
  if (domain.endsWith('karpenter.k8s.aws') && !AWSAllowedLabels.has(rawKey))
    return { rule: LabelRules.awsDomain.rule, message: awsLabelMessage(rawKey) };
  if (!opts.runtime) return undefined;
  const message = isRestrictedLabel(opts.normalize ? (NormalizedLabels[rawKey] ?? rawKey) : rawKey);
  return message ? { rule: 'IsRestrictedLabel', message } : undefined;
}

/** Upstream's label CEL rules (on a single key; the map forms wrap them in `self.all(x, ...)`). */
const LabelRules = {
  karpenterDomain: {
    rule: `self in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || !self.find("^([^/]+)").endsWith("karpenter.sh")`,
    message: 'label domain "karpenter.sh" is restricted',
  },
  nodepool: {
    rule: `self != "karpenter.sh/nodepool"`,
    message: 'label "karpenter.sh/nodepool" is restricted',
  },
  hostname: {
    rule: `self != "kubernetes.io/hostname"`,
    message: 'label "kubernetes.io/hostname" is restricted',
  },
  awsDomain: {
    rule: `self in ${celList(AWSAllowedLabels)} || !self.find("^([^/]+)").endsWith("karpenter.k8s.aws")`,
    message: 'label domain "karpenter.k8s.aws" is restricted',
  },
} as const;

const forAll = (r: CelRule): CelRule => ({
  rule: `self.all(x, ${r.rule.replaceAll('self', 'x')})`,
  message: r.message,
});

/** Checks a label key's syntax: qualified name, prefix ≤ 253 and name ≤ 63 characters (IsQualifiedName). */
function qualifiedNameProblem(key: string): string | undefined {
  if (!Patterns.qualifiedName.test(key)) return Hints.qualifiedName;
  const slash = key.indexOf('/');
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0 && slash > 253) return 'prefix part must be no more than 253 characters';
  if (name.length > 63) return 'name part must be no more than 63 characters';
  return undefined;
}

/**
 * A requirement key. NodePool (`allowNodePool` false): `karpenter.sh/nodepool` forbidden, and upstream's
 * `RuntimeValidate` `IsRestrictedLabel` applied after the CEL rules; NodeClaim (true): the key allowed and only the CEL
 * rules checked, as upstream validates NodeClaims by their CRD alone.
 */
function requirementKeySchema(allowNodePool: boolean) {
  const cels: CelRule[] = [
    LabelRules.karpenterDomain,
    ...(allowNodePool ? [] : [LabelRules.nodepool]),
    LabelRules.hostname,
    LabelRules.awsDomain,
  ];
  return withRules(pattern(Patterns.qualifiedName, Hints.qualifiedName).max(316), cels, (v, ctx) => {
    if (typeof v !== 'string') return;
    const p = Patterns.qualifiedName.test(v) ? qualifiedNameProblem(v) : undefined;
    if (p) ctx.fail('IsQualifiedName', p, { value: v });
    const r = restrictedLabelRule(v, { allowNodePool, normalize: true, runtime: !allowNodePool });
    if (r) ctx.fail(r.rule, r.message, { value: v });
  });
}

/** Operators of a Karpenter requirement (core/v1 plus `Gte`/`Lte`). */
export const RequirementOperators = [
  'In',
  'NotIn',
  'Exists',
  'DoesNotExist',
  'Gt',
  'Lt',
  'Gte',
  'Lte',
] as const;

/** A NodeSelectorRequirementWithMinValues. */
function requirementSchema(allowNodePool: boolean) {
  return z.strictObject({
    key: requirementKeySchema(allowNodePool).describe('The label key that the selector applies to.'),
    minValues: z
      .int()
      .min(1)
      .max(50)
      .optional()
      .describe('Minimum number of unique values that must stay possible for this key (1-50).'),
    operator: z.enum(RequirementOperators).describe("Represents a key's relationship to a set of values."),
    values: z
      .array(labelValueSchema())
      .optional()
      .meta({ 'x-kubernetes-list-type': 'atomic' })
      .describe(
        'In/NotIn: one or more values; Exists/DoesNotExist: none; Gt/Lt/Gte/Lte: a single non-negative integer.',
      ),
  });
}

const isComparison = (op: unknown) => op === 'Gt' || op === 'Lt' || op === 'Gte' || op === 'Lte';

/** `requirements` with upstream's list-level CEL rules, reported at the offending element's field. */
function requirementsSchema(allowNodePool: boolean) {
  const rules: CelRule[] = [
    {
      rule: `self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)`,
      message: "requirements with operator 'In' must have a value defined",
    },
    {
      rule: `self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)`,
      message: "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
    },
    {
      rule: `self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)`,
      message:
        "requirements with 'minValues' must have at least that many values specified in the 'values' field",
    },
    {
      rule: `self.all(x, (x.operator == 'Exists' || x.operator == 'DoesNotExist') ? (!has(x.values) || x.values.size() == 0) : true)`,
      message: "requirements with operator 'Exists' or 'DoesNotExist' may not have values",
    },
  ];
  const [inRule, cmpRule, minRule, existsRule] = rules as [CelRule, CelRule, CelRule, CelRule];
  return withRules(
    z.array(requirementSchema(allowNodePool)).max(100).meta({ 'x-kubernetes-list-type': 'atomic' }),
    rules,
    (v, ctx) => {
      arr(v).forEach((r, i) => {
        if (!isObj(r)) return;
        const values = Array.isArray(r.values) ? r.values : [];
        if (r.operator === 'In' && values.length === 0) {
          ctx.fail(inRule.rule, inRule.message, { path: [i, 'values'], code: 'FieldValueRequired' });
        }
        if (isComparison(r.operator)) {
          const ok = values.length === 1 && typeof values[0] === 'string' && /^\+?[0-9]+$/.test(values[0]);
          if (!ok) ctx.fail(cmpRule.rule, cmpRule.message, { path: [i, 'values'], value: r.values });
        }
        const mv = r.minValues;
        if (r.operator === 'In' && typeof mv === 'number' && mv >= 1 && mv <= 50 && values.length < mv) {
          ctx.fail(minRule.rule, minRule.message, { path: [i, 'minValues'], value: r.minValues });
        }
        if ((r.operator === 'Exists' || r.operator === 'DoesNotExist') && values.length > 0) {
          ctx.fail(existsRule.rule, existsRule.message, {
            path: [i, 'values'],
            code: 'FieldValueForbidden',
          });
        }
        // NodePool only: upstream runs it in `NodePool.RuntimeValidate`; NodeClaims get no runtime validation.
        const p = allowNodePool ? undefined : wellKnownValuesProblem(r.key, r.operator, values, r.minValues);
        if (p) ctx.fail('WellKnownValuesForRequirements', p, { path: [i, 'values'], value: r.values });
      });
    },
  );
}

/** A node taint (`taints[]`, `startupTaints[]`). */
export const TaintSchema = z.strictObject({
  effect: z
    .enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute'])
    .describe('The effect of the taint on pods that do not tolerate it.'),
  key: pattern(Patterns.qualifiedName, Hints.qualifiedName).min(1).describe('The taint key.'),
  timeAdded: dateTime().optional(),
  value: pattern(Patterns.qualifiedName, Hints.qualifiedName).optional().describe('The taint value.'),
});

const taintsSchema = () => z.array(TaintSchema).meta({ 'x-kubernetes-list-type': 'atomic' });

/** Reference from a NodePool/NodeClaim to its NodeClass. */
export const NodeClassReferenceSchema = z.strictObject({
  group: celAll(pattern(Patterns.groupName, Hints.groupName), [
    cel(`self != ''`, 'group may not be empty', (v) => v !== '', { code: 'FieldValueRequired' }),
  ]).describe('API group of the NodeClass, e.g. karpenter.k8s.aws.'),
  kind: celAll(z.string(), [
    cel(`self != ''`, 'kind may not be empty', (v) => v !== '', { code: 'FieldValueRequired' }),
  ]).describe('Kind of the NodeClass, e.g. EC2NodeClass.'),
  name: celAll(z.string(), [
    cel(`self != ''`, 'name may not be empty', (v) => v !== '', { code: 'FieldValueRequired' }),
  ]).describe('Name of the NodeClass.'),
});

/** Runtime check (upstream `validateTaints`): no duplicate key/effect pair across taints and startupTaints. */
export function duplicateTaintCheck(v: unknown, ctx: RuleContext): void {
  if (!isObj(v)) return;
  const seen = new Set<string>();
  for (const field of ['taints', 'startupTaints']) {
    arr(v[field]).forEach((t, i) => {
      if (!isObj(t) || typeof t.key !== 'string') return;
      const id = `${t.key}=${String(t.effect ?? '')}`;
      if (seen.has(id)) {
        ctx.fail('validateTaints', `duplicate taint Key/Effect pair ${id}`, {
          path: [field, i],
          code: 'FieldValueDuplicate',
        });
      }
      seen.add(id);
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// NodePool (karpenter.sh/v1)
// ---------------------------------------------------------------------------------------------------

/** Template labels: CEL rules of upstream plus IsRestrictedLabel, qualified keys, valid values. */
export const templateLabelsSchema = withRules(
  z
    .record(z.string(), labelValueSchema())
    .meta({ 'x-kubernetes-map-type': 'atomic', maxProperties: 100 })
    .describe('Labels copied onto NodeClaims and Nodes.'),
  [
    forAll(LabelRules.karpenterDomain),
    forAll(LabelRules.nodepool),
    forAll(LabelRules.hostname),
    forAll(LabelRules.awsDomain),
  ],
  (v, ctx) => {
    if (!isObj(v)) return;
    const keys = Object.keys(v);
    if (keys.length > 100)
      ctx.fail('maxProperties: 100', 'must have at most 100 labels', { code: 'FieldValueTooMany' });
    for (const k of keys) {
      const p = qualifiedNameProblem(k);
      if (p) ctx.fail('IsQualifiedName', `invalid label key "${k}": ${p}`, { path: [k] });
      const r = restrictedLabelRule(k, { allowNodePool: false, normalize: false, runtime: true });
      if (r) ctx.fail(r.rule, r.message, { path: [k], value: k });
    }
  },
);

/** Transition rules on nodeClassRef (CRD only). */
const nodeClassRefWithTransitions = transitionRules(NodeClassReferenceSchema, [
  { rule: 'self.group == oldSelf.group', message: 'nodeClassRef.group is immutable' },
  { rule: 'self.kind == oldSelf.kind', message: 'nodeClassRef.kind is immutable' },
]);

/**
 * NodePool `spec.template.spec` fields without the duplicate-taint rule (reused, with `nodeClassRef` optional, by the
 * KarpenterMachinePool's `spec.nodePool` in capi.ts).
 */
export const NodeClaimTemplateSpecFields = z.strictObject({
  expireAfter: pattern(Patterns.durationOrNever, Hints.durationOrNever)
    .default(DefaultExpireAfter)
    .describe('How long a node may live before it is replaced ("Never" to disable). Default 720h.'),
  nodeClassRef: nodeClassRefWithTransitions.describe('The NodeClass with provider-specific configuration.'),
  requirements: requirementsSchema(false).describe('Requirements every node of this NodePool satisfies.'),
  startupTaints: taintsSchema()
    .optional()
    .describe(
      'Taints applied at startup and expected to be removed by a DaemonSet; ignored when scheduling.',
    ),
  taints: taintsSchema().optional().describe('Taints applied to every node.'),
  terminationGracePeriod: pattern(Patterns.duration, Hints.duration)
    .optional()
    .describe('Maximum time to drain a node before its pods are deleted regardless of PDBs.'),
});

/** NodePool `spec.template.spec`. */
export const NodeClaimTemplateSpecSchema = withRules(NodeClaimTemplateSpecFields, [], duplicateTaintCheck);

/** NodePool `spec.template`. */
export const NodeClaimTemplateSchema = z.strictObject({
  metadata: z
    .strictObject({
      annotations: z
        .record(z.string(), z.string())
        .optional()
        .meta({ 'x-kubernetes-map-type': 'granular' })
        .describe('Annotations copied onto NodeClaims and Nodes.'),
      labels: templateLabelsSchema.optional(),
    })
    .optional(),
  spec: NodeClaimTemplateSpecSchema,
});

/** Consolidation policies (`Balanced` arrived in Karpenter v1.14; scored in `disruption/balanced.ts`). */
export const ConsolidationPolicies = ['WhenEmpty', 'WhenEmptyOrUnderutilized', 'Balanced'] as const;

function scheduleCheck(v: unknown, ctx: RuleContext): void {
  if (typeof v !== 'string' || !Patterns.schedule.test(v)) return;
  try {
    CronExpressionParser.parse(v, { strict: false });
  } catch (e) {
    ctx.fail('cron.ParseStandard', `invalid cron schedule: ${(e as Error).message}`, { value: v });
  }
}

/** A disruption budget. */
export const BudgetSchema = z.strictObject({
  duration: pattern(Patterns.budgetDuration, Hints.budgetDuration)
    .optional()
    .describe('How long the budget is active after each schedule hit; required with schedule.'),
  nodes: pattern(Patterns.budgetNodes, Hints.budgetNodes)
    .default(DefaultBudgetNodes)
    .describe('Maximum number (or percentage) of the NodePool nodes disrupted at once.'),
  reasons: withRules(z.array(z.enum(['Underutilized', 'Empty', 'Drifted'])).max(50), [], (v, ctx) => {
    const seen = new Set<unknown>();
    arr(v).forEach((r, i) => {
      if (seen.has(r)) {
        ctx.fail('x-kubernetes-list-type: set', `duplicate reason "${String(r)}"`, {
          path: [i],
          code: 'FieldValueDuplicate',
          value: r,
        });
      }
      seen.add(r);
    });
  })
    .meta({ 'x-kubernetes-list-type': 'set' })
    .optional()
    .describe('Disruption reasons the budget applies to; all when unset.'),
  schedule: withRules(pattern(Patterns.schedule, Hints.schedule), [], scheduleCheck)
    .optional()
    .describe('Cron schedule (UTC) when the budget becomes active; requires duration.'),
});

const budgetPairRule: CelRule = {
  rule: 'self.all(x, has(x.schedule) == has(x.duration))',
  message: "'schedule' must be set with 'duration'",
};

/** NodePool `spec.disruption`. */
export const DisruptionSchema = z.strictObject({
  budgets: withRules(
    z
      .array(BudgetSchema)
      .max(50)
      .meta({ 'x-kubernetes-list-type': 'atomic' })
      .default(() => defaultBudgets())
      .describe('Disruption budgets; the most restrictive active one applies. Default: nodes 10%.'),
    [budgetPairRule],
    (v, ctx) => {
      arr(v).forEach((b, i) => {
        if (isObj(b) && has(b, 'schedule') !== has(b, 'duration')) {
          ctx.fail(budgetPairRule.rule, budgetPairRule.message, {
            path: has(b, 'schedule') ? [i, 'duration'] : [i, 'schedule'],
            code: 'FieldValueRequired',
          });
        }
      });
    },
  ),
  consolidateAfter: pattern(Patterns.durationOrNever, Hints.durationOrNever).describe(
    'How long a node must be consolidatable before it is consolidated ("Never" to disable).',
  ),
  consolidationPolicy: z
    .enum(ConsolidationPolicies)
    .default(DefaultConsolidationPolicy)
    .describe('Which nodes consolidation may disrupt. Default WhenEmptyOrUnderutilized.'),
});

const staticRules = [
  cel(
    `!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits))`,
    "only 'limits.nodes' is supported on static NodePools",
    (v) =>
      !has(v, 'replicas') ||
      !isObj((v as Obj).limits) ||
      Object.keys((v as Obj).limits as Obj).every((k) => k === 'nodes'),
  ),
  cel(
    `!has(self.replicas) || !has(self.weight)`,
    "'weight' is not supported on static NodePools",
    (v) => !has(v, 'replicas') || !has(v, 'weight'),
    { code: 'FieldValueForbidden' },
  ),
];

/** NodePool `spec` fields without the static/transition rules (reused by the KarpenterMachinePool's `spec.nodePool`). */
export const NodePoolSpecFields = z.strictObject({
  disruption: DisruptionSchema.prefault({ consolidateAfter: DefaultConsolidateAfter }).describe(
    "Parameters of Karpenter's disruption logic.",
  ),
  limits: ResourceListSchema.optional().describe('Upper bounds on the total resources of all nodes.'),
  replicas: z.int().min(0).optional().describe('Fixed node count for a static NodePool (alpha).'),
  template: NodeClaimTemplateSchema.describe('Template of the NodeClaims this NodePool launches.'),
  weight: z.int().min(1).max(100).optional().describe('Priority among NodePools (1-100); higher first.'),
});

/** NodePool `spec`. */
export const NodePoolSpecSchema = transitionRules(celAll(NodePoolSpecFields, staticRules), [
  {
    rule: 'has(self.replicas) == has(oldSelf.replicas)',
    message:
      'Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes',
  },
]);

/** NodePool `status`. */
export const NodePoolStatusSchema = z.strictObject({
  conditions: conditionsSchema(false, true).optional(),
  nodeClassObservedGeneration: z.int().optional(),
  nodes: z.int().default(0).describe('Number of nodes of this NodePool.'),
  resources: ResourceListSchema.optional().describe('Resources provisioned by this NodePool.'),
});

// ---------------------------------------------------------------------------------------------------
// NodeClaim (karpenter.sh/v1)
// ---------------------------------------------------------------------------------------------------

/** NodeClaim `spec`. */
export const NodeClaimSpecSchema = transitionRules(
  withRules(
    z.strictObject({
      expireAfter: pattern(Patterns.durationOrNever, Hints.durationOrNever).default(DefaultExpireAfter),
      nodeClassRef: NodeClassReferenceSchema,
      requirements: requirementsSchema(true),
      resources: z.strictObject({ requests: ResourceListSchema.optional() }).optional(),
      startupTaints: taintsSchema().optional(),
      taints: taintsSchema().optional(),
      terminationGracePeriod: pattern(Patterns.duration, Hints.duration).optional(),
    }),
    [],
    duplicateTaintCheck,
  ),
  [{ rule: 'self == oldSelf', message: 'spec is immutable' }],
);

/** NodeClaim `status`. */
export const NodeClaimStatusSchema = z.strictObject({
  allocatable: ResourceListSchema.optional(),
  capacity: ResourceListSchema.optional(),
  conditions: conditionsSchema(true, true).optional(),
  imageID: z.string().optional(),
  lastPodEventTime: dateTime().optional(),
  nodeName: z.string().optional(),
  providerID: z.string().optional(),
});

// ---------------------------------------------------------------------------------------------------
// EC2NodeClass (karpenter.k8s.aws/v1)
// ---------------------------------------------------------------------------------------------------

const selectorTags = () =>
  celAll(z.record(z.string(), z.string()).meta({ maxProperties: 20 }), [
    cel(`self.all(k, k != '' && self[k] != '')`, "empty tag keys or values aren't supported", (v) =>
      Object.entries(isObj(v) ? v : {}).every(([k, x]) => k !== '' && x !== ''),
    ),
    cel('size(self) <= 20', 'must have at most 20 tags', (v) => Object.keys(isObj(v) ? v : {}).length <= 20, {
      code: 'FieldValueTooMany',
    }),
  ]);

/** Fields of a selector term, for the "exactly one / mutually exclusive" rules. */
function termRules(
  list: string,
  fields: string[],
  exclusive: Array<{ field: string; others: string[]; what: string }>,
  opts: { nonEmpty: boolean },
) {
  const rules: Array<{ rule: CelRule; check: Check }> = [];
  if (opts.nonEmpty) {
    rules.push(
      cel('self.size() != 0', `${list} cannot be empty`, (v) => arr(v).length > 0, {
        code: 'FieldValueRequired',
      }),
    );
  }
  const atLeast: CelRule = {
    rule: `self.all(x, ${fields.map((f) => `has(x.${f})`).join(' || ')})`,
    message: `expected at least one, got none, [${fields.map((f) => `'${f}'`).join(', ')}]`,
  };
  rules.push({
    rule: atLeast,
    check: (v, ctx) =>
      arr(v).forEach((t, i) => {
        if (isObj(t) && !fields.some((f) => has(t, f)))
          ctx.fail(atLeast.rule, atLeast.message, { path: [i] });
      }),
  });
  for (const ex of exclusive) {
    const r: CelRule = {
      rule: `!self.exists(x, has(x.${ex.field}) && (${ex.others.map((o) => `has(x.${o})`).join(' || ')}))`,
      message: `'${ex.field}' is mutually exclusive, cannot be set with a combination of other fields in ${ex.what}`,
    };
    rules.push({
      rule: r,
      check: (v, ctx) =>
        arr(v).forEach((t, i) => {
          if (isObj(t) && has(t, ex.field) && ex.others.some((o) => has(t, o))) {
            ctx.fail(r.rule, r.message, { path: [i], code: 'FieldValueForbidden' });
          }
        }),
    });
  }
  return rules;
}

const AMIFamilies = [
  'AL2',
  'AL2023',
  'Bottlerocket',
  'Custom',
  'Windows2019',
  'Windows2022',
  'Windows2025',
] as const;
const AliasFamilies: Record<string, (typeof AMIFamilies)[number]> = {
  al2: 'AL2',
  al2023: 'AL2023',
  bottlerocket: 'Bottlerocket',
  windows2019: 'Windows2019',
  windows2022: 'Windows2022',
  windows2025: 'Windows2025',
};
const windowsFamilies = ['windows2019', 'windows2022', 'windows2025'];

const aliasSchema = celAll(z.string().max(30), [
  cel(
    `self.matches('^[a-zA-Z0-9]+@.+$')`,
    "'alias' is improperly formatted, must match the format 'family@version'",
    (v) => typeof v !== 'string' || /^[a-zA-Z0-9]+@.+$/.test(v),
    { withValue: true },
  ),
  cel(
    `self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']`,
    "family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",
    (v) => typeof v !== 'string' || !/^[a-zA-Z0-9]+@.+$/.test(v) || v.split('@')[0]! in AliasFamilies,
    { withValue: true, code: 'FieldValueNotSupported' },
  ),
  cel(
    `self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? self.split('@')[1] == 'latest' : true`,
    "windows families may only specify version 'latest'",
    (v) =>
      typeof v !== 'string' || !windowsFamilies.includes(v.split('@')[0]!) || v.split('@')[1] === 'latest',
    { withValue: true },
  ),
]);

const amiSelectorTermsSchema = celAll(
  z
    .array(
      z.strictObject({
        alias: aliasSchema
          .optional()
          .describe('An EKS-optimized AMI alias like "al2023@latest" or "al2023@v20240807".'),
        id: pattern(Patterns.amiID, 'must be an AMI id like "ami-0123456789abcdef0"').optional(),
        name: z.string().optional(),
        owner: z.string().optional(),
        ssmParameter: z.string().optional(),
        tags: selectorTags().optional(),
      }),
    )
    .min(1)
    .max(30),
  [
    ...termRules(
      'amiSelectorTerms',
      ['tags', 'id', 'name', 'alias', 'ssmParameter'],
      [
        { field: 'id', others: ['alias', 'tags', 'name', 'owner'], what: 'amiSelectorTerms' },
        { field: 'alias', others: ['id', 'tags', 'name', 'owner'], what: 'amiSelectorTerms' },
      ],
      { nonEmpty: false },
    ),
    cel(
      '!(self.exists(x, has(x.alias)) && self.size() != 1)',
      "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
      (v) => !(arr(v).some((t) => has(t, 'alias')) && arr(v).length !== 1),
      { code: 'FieldValueForbidden' },
    ),
  ],
);

const subnetSelectorTermsSchema = celAll(
  z
    .array(
      z.strictObject({
        id: pattern(Patterns.subnetID, 'must be a subnet id like "subnet-0123456789abcdef0"').optional(),
        tags: selectorTags().optional(),
      }),
    )
    .max(30),
  termRules(
    'subnetSelectorTerms',
    ['tags', 'id'],
    [{ field: 'id', others: ['tags'], what: 'a subnet selector term' }],
    {
      nonEmpty: true,
    },
  ),
);

const securityGroupSelectorTermsSchema = celAll(
  z
    .array(
      z.strictObject({
        id: pattern(
          Patterns.securityGroupID,
          'must be a security group id like "sg-0123456789abcdef0"',
        ).optional(),
        name: z.string().optional(),
        tags: selectorTags().optional(),
      }),
    )
    .max(30),
  termRules(
    'securityGroupSelectorTerms',
    ['tags', 'id', 'name'],
    [
      { field: 'id', others: ['tags', 'name'], what: 'a security group selector term' },
      { field: 'name', others: ['tags', 'id'], what: 'a security group selector term' },
    ],
    { nonEmpty: true },
  ),
);

const capacityReservationSelectorTermsSchema = celAll(
  z
    .array(
      z.strictObject({
        id: pattern(
          Patterns.capacityReservationID,
          'must be a capacity reservation id like "cr-0123456789abcdef0"',
        ).optional(),
        instanceMatchCriteria: z.enum(['open', 'targeted']).optional(),
        ownerID: pattern(Patterns.accountID, 'must be a 12-digit AWS account id').optional(),
        tags: selectorTags().optional(),
      }),
    )
    .max(30),
  termRules(
    'capacityReservationSelectorTerms',
    ['tags', 'id', 'instanceMatchCriteria'],
    [
      {
        field: 'id',
        others: ['tags', 'ownerID', 'instanceMatchCriteria'],
        what: 'a capacity reservation selector term',
      },
    ],
    { nonEmpty: false },
  ),
);

const EvictionSignals = [
  'memory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'pid.available',
];
const ReservedResources = ['cpu', 'memory', 'ephemeral-storage', 'pid'];

/**
 * The CRD rule "valid keys for <field> are [...]" and its check. `style` spells the rule as upstream's CRD does:
 * `in` (`self.all(x, x in ['a','b'])`, the eviction maps) or `or` (`self.all(x, x=='a' || x=='b')`, the reserved maps).
 */
function keysIn(field: string, allowed: string[], style: 'in' | 'or' = 'in') {
  const list = `[${allowed.map((a) => `'${a}'`).join(',')}]`;
  const test = style === 'in' ? `x in ${list}` : allowed.map((a) => `x=='${a}'`).join(' || ');
  const rule: CelRule = { rule: `self.all(x, ${test})`, message: `valid keys for ${field} are ${list}` };
  return {
    rule,
    check: ((v, ctx) => {
      for (const k of Object.keys(isObj(v) ? v : {})) {
        if (!allowed.includes(k))
          ctx.fail(rule.rule, rule.message, { path: [k], code: 'FieldValueNotSupported', value: k });
      }
    }) as Check,
  };
}

const evictionMap = (field: string) =>
  celAll(z.record(z.string(), pattern(Patterns.eviction, Hints.eviction)), [keysIn(field, EvictionSignals)]);
const reservedMap = (field: string) =>
  celAll(z.record(z.string(), pattern(Patterns.quantity, Hints.quantity)), [
    keysIn(field, ReservedResources, 'or'),
    cel(
      `self.all(x, !self[x].startsWith('-'))`,
      `${field} value cannot be a negative resource quantity`,
      (v) => Object.values(isObj(v) ? v : {}).every((x) => typeof x !== 'string' || !x.startsWith('-')),
    ),
  ]);

/** EC2NodeClass `spec.kubelet`. */
export const KubeletConfigurationSchema = celAll(
  z.strictObject({
    clusterDNS: z.array(z.string()).optional(),
    cpuCFSQuota: z.boolean().optional(),
    evictionHard: evictionMap('evictionHard').optional(),
    evictionMaxPodGracePeriod: z.int().optional().meta({ format: 'int32' }),
    evictionSoft: evictionMap('evictionSoft').optional(),
    evictionSoftGracePeriod: celAll(z.record(z.string(), z.string()), [
      keysIn('evictionSoftGracePeriod', EvictionSignals),
    ]).optional(),
    imageGCHighThresholdPercent: z.int().min(0).max(100).optional().meta({ format: 'int32' }),
    imageGCLowThresholdPercent: z.int().min(0).max(100).optional().meta({ format: 'int32' }),
    kubeReserved: reservedMap('kubeReserved')
      .optional()
      .describe('Resources reserved for Kubernetes daemons.'),
    maxPods: z.int().min(0).optional().meta({ format: 'int32' }).describe('Maximum number of pods per node.'),
    podsPerCore: z
      .int()
      .min(0)
      .optional()
      .meta({ format: 'int32' })
      .describe('Maximum number of pods per vCPU; 0 disables.'),
    systemReserved: reservedMap('systemReserved').optional().describe('Resources reserved for OS daemons.'),
  }),
  [
    cel(
      'has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true',
      'imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent',
      (v) =>
        !isObj(v) ||
        typeof v.imageGCHighThresholdPercent !== 'number' ||
        typeof v.imageGCLowThresholdPercent !== 'number' ||
        v.imageGCHighThresholdPercent > v.imageGCLowThresholdPercent,
    ),
    cel(
      'has(self.evictionSoft) ? self.evictionSoft.all(e, (e in self.evictionSoftGracePeriod)):true',
      'evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod',
      (v) =>
        !isObj(v) ||
        !isObj(v.evictionSoft) ||
        Object.keys(v.evictionSoft).every(
          (k) => isObj(v.evictionSoftGracePeriod) && k in v.evictionSoftGracePeriod,
        ),
    ),
    cel(
      'has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, (e in self.evictionSoft)):true',
      'evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft',
      (v) =>
        !isObj(v) ||
        !isObj(v.evictionSoftGracePeriod) ||
        Object.keys(v.evictionSoftGracePeriod).every((k) => isObj(v.evictionSoft) && k in v.evictionSoft),
    ),
  ],
);

const ebsSchema = celAll(
  z.strictObject({
    deleteOnTermination: z.boolean().optional(),
    encrypted: z.boolean().optional(),
    iops: z.int().optional(),
    kmsKeyID: z.string().optional(),
    snapshotID: z.string().optional(),
    throughput: z.int().optional(),
    volumeInitializationRate: z.int().min(100).max(300).optional(),
    volumeSize: pattern(Patterns.volumeSize, Hints.volumeSize)
      .optional()
      .describe('Volume size, e.g. "20Gi".'),
    volumeType: z.enum(['standard', 'io1', 'io2', 'gp2', 'sc1', 'st1', 'gp3']).optional(),
  }),
  [
    cel(
      'has(self.snapshotID) || has(self.volumeSize)',
      'snapshotID or volumeSize must be defined',
      (v) => has(v, 'snapshotID') || has(v, 'volumeSize'),
      { code: 'FieldValueRequired' },
    ),
    cel(
      "!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID != '')",
      'snapshotID must be set when volumeInitializationRate is set',
      (v) => !has(v, 'volumeInitializationRate') || (has(v, 'snapshotID') && (v as Obj).snapshotID !== ''),
    ),
  ],
);

const blockDeviceMappingsSchema = celAll(
  z
    .array(
      z.strictObject({
        deviceName: z.string().optional(),
        ebs: ebsSchema.optional(),
        rootVolume: z.boolean().optional(),
      }),
    )
    .max(50),
  [
    cel(
      'self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1',
      'must have only one blockDeviceMappings with rootVolume',
      (v) => arr(v).filter((b) => isObj(b) && b.rootVolume === true).length <= 1,
    ),
  ],
);

const networkInterfacesSchema = celAll(
  z
    .array(
      z.strictObject({
        deviceIndex: z.int().min(0),
        interfaceType: z.enum(['interface', 'efa-only']),
        networkCardIndex: z.int().min(0),
      }),
    )
    .max(150),
  [
    cel(
      "self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && x.interfaceType == 'interface')",
      "networkInterfaces must include a primary interface with interfaceType='interface'",
      (v) =>
        arr(v).length === 0 ||
        arr(v).some(
          (x) =>
            isObj(x) && x.deviceIndex === 0 && x.networkCardIndex === 0 && x.interfaceType === 'interface',
        ),
    ),
    cel(
      "self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && x.deviceIndex == y.deviceIndex).size() == 1 && (x.interfaceType != 'efa-only' || self.filter(y, x.networkCardIndex == y.networkCardIndex && y.interfaceType == 'efa-only').size() == 1))",
      'networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card',
      (v) => {
        const l = arr(v).filter(isObj);
        return l.every(
          (x) =>
            l.filter((y) => x.networkCardIndex === y.networkCardIndex && x.deviceIndex === y.deviceIndex)
              .length === 1 &&
            (x.interfaceType !== 'efa-only' ||
              l.filter((y) => x.networkCardIndex === y.networkCardIndex && y.interfaceType === 'efa-only')
                .length === 1),
        );
      },
    ),
  ],
);

const RestrictedTags: Array<[string, (k: string) => boolean]> = [
  ['eks:eks-cluster-name', (k) => k === 'eks:eks-cluster-name'],
  ['kubernetes.io/cluster/', (k) => k.startsWith('kubernetes.io/cluster')],
  ['karpenter.sh/nodepool', (k) => k === 'karpenter.sh/nodepool'],
  ['karpenter.sh/nodeclaim', (k) => k === 'karpenter.sh/nodeclaim'],
  ['karpenter.k8s.aws/ec2nodeclass', (k) => k === 'karpenter.k8s.aws/ec2nodeclass'],
];

const tagsSchema = withRules(
  z.record(z.string(), z.string()).describe('Tags applied to every EC2 resource Karpenter creates.'),
  [
    { rule: "self.all(k, k != '')", message: "empty tag keys aren't supported" },
    {
      rule: "self.all(k, k !='eks:eks-cluster-name')",
      message: 'tag contains a restricted tag matching eks:eks-cluster-name',
    },
    {
      rule: "self.all(k, !k.startsWith('kubernetes.io/cluster') )",
      message: 'tag contains a restricted tag matching kubernetes.io/cluster/',
    },
    {
      rule: "self.all(k, k != 'karpenter.sh/nodepool')",
      message: 'tag contains a restricted tag matching karpenter.sh/nodepool',
    },
    {
      rule: "self.all(k, k !='karpenter.sh/nodeclaim')",
      message: 'tag contains a restricted tag matching karpenter.sh/nodeclaim',
    },
    {
      rule: "self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')",
      message: 'tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass',
    },
  ],
  (v, ctx) => {
    for (const k of Object.keys(isObj(v) ? v : {})) {
      if (k === '') ctx.fail("self.all(k, k != '')", "empty tag keys aren't supported", { path: [k] });
      for (const [name, match] of RestrictedTags) {
        if (match(k)) {
          ctx.fail(`restricted tag ${name}`, `tag contains a restricted tag matching ${name}`, {
            path: [k],
            code: 'FieldValueForbidden',
          });
        }
      }
    }
  },
);

const nonEmptyString = (field: string) =>
  celAll(z.string(), [
    cel(`self != ''`, `${field} cannot be empty`, (v) => v !== '', { code: 'FieldValueRequired' }),
  ]);

const ec2SpecRules = [
  cel(
    '(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))',
    "must specify exactly one of ['role', 'instanceProfile']",
    (v) => has(v, 'role') !== has(v, 'instanceProfile'),
  ),
  ...Object.entries(AliasFamilies).map(([alias, family]) =>
    cel(
      `!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == '${alias}') ? (self.amiFamily == 'Custom' || self.amiFamily == '${family}') : true)`,
      `if set, amiFamily must be '${family}' or 'Custom' when using ${/^[AEIOU]/.test(family) ? 'an' : 'a'} ${family} alias`,
      (v) => {
        if (!isObj(v) || v.amiFamily === undefined) return true;
        const used = arr(v.amiSelectorTerms).some(
          (t) => isObj(t) && typeof t.alias === 'string' && t.alias.split('@')[0] === alias,
        );
        return !used || v.amiFamily === 'Custom' || v.amiFamily === family;
      },
    ),
  ),
  cel(
    'self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)',
    'must specify amiFamily if amiSelectorTerms does not contain an alias',
    (v) =>
      !isObj(v) ||
      !Array.isArray(v.amiSelectorTerms) ||
      v.amiSelectorTerms.some((t) => has(t, 'alias')) ||
      has(v, 'amiFamily'),
    { code: 'FieldValueRequired' },
  ),
];

/**
 * EC2NodeClass `spec` fields without the cross-field rules (reused, with the selector terms optional, by the
 * KarpenterMachinePool's `spec.ec2NodeClass` in capi.ts).
 */
export const EC2NodeClassSpecFields = z.strictObject({
  amiFamily: z.enum(AMIFamilies).optional().describe('AMI family; implied by an alias, required otherwise.'),
  amiSelectorTerms: amiSelectorTermsSchema.describe(
    'How to find the AMIs (an alias, or id/name/tags/ssmParameter).',
  ),
  associatePublicIPAddress: z.boolean().optional(),
  blockDeviceMappings: blockDeviceMappingsSchema.optional(),
  capacityReservationSelectorTerms: capacityReservationSelectorTermsSchema.optional(),
  connectionTracking: celAll(
    z.strictObject({
      tcpEstablishedTimeout: z.int().min(60).max(432000).optional(),
      udpStreamTimeout: z.int().min(60).max(180).optional(),
      udpTimeout: z.int().min(30).max(60).optional(),
    }),
    [
      cel(
        'has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)',
        'at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set',
        (v) => has(v, 'tcpEstablishedTimeout') || has(v, 'udpStreamTimeout') || has(v, 'udpTimeout'),
        { code: 'FieldValueRequired' },
      ),
    ],
  ).optional(),
  context: z.string().optional(),
  cpuOptions: z.strictObject({ nestedVirtualization: z.enum(['enabled', 'disabled']).optional() }).optional(),
  detailedMonitoring: z.boolean().optional(),
  instanceProfile: nonEmptyString('instanceProfile').optional().describe('IAM instance profile (XOR role).'),
  instanceStorePolicy: z.enum(['RAID0']).optional(),
  ipPrefixCount: z.int().min(0).optional(),
  kubelet: KubeletConfigurationSchema.optional().describe('Kubelet settings that change allocatable.'),
  metadataOptions: z
    .strictObject({
      httpEndpoint: z.enum(['enabled', 'disabled']).default(DefaultMetadataOptions.httpEndpoint),
      httpProtocolIPv6: z.enum(['enabled', 'disabled']).default(DefaultMetadataOptions.httpProtocolIPv6),
      httpPutResponseHopLimit: z.int().min(1).max(64).default(DefaultMetadataOptions.httpPutResponseHopLimit),
      httpTokens: z.enum(['required', 'optional']).default(DefaultMetadataOptions.httpTokens),
    })
    .prefault({ ...DefaultMetadataOptions })
    .describe('Instance metadata service options (IMDSv2 required by default).'),
  networkInterfaces: networkInterfacesSchema.optional(),
  placementGroupSelector: celAll(
    z.strictObject({
      id: pattern(
        Patterns.placementGroupID,
        'must be a placement group id like "pg-0123456789abcdef0"',
      ).optional(),
      name: z.string().min(1).optional(),
    }),
    [
      cel(
        'has(self.name) || has(self.id)',
        "expected at least one, got none, ['name', 'id']",
        (v) => has(v, 'name') || has(v, 'id'),
        { code: 'FieldValueRequired' },
      ),
      cel(
        '!(has(self.name) && has(self.id))',
        "'name' and 'id' are mutually exclusive",
        (v) => !(has(v, 'name') && has(v, 'id')),
        { code: 'FieldValueForbidden' },
      ),
    ],
  ).optional(),
  role: nonEmptyString('role')
    .optional()
    .describe('IAM role for the node instance profile (XOR instanceProfile).'),
  securityGroupSelectorTerms: securityGroupSelectorTermsSchema.describe('How to find the security groups.'),
  subnetSelectorTerms: subnetSelectorTermsSchema.describe('How to find the subnets.'),
  tags: tagsSchema.optional(),
  userData: z
    .string()
    .optional()
    .describe('User data merged with (or, for Custom, replacing) the bootstrap.'),
});

/**
 * EC2NodeClass `spec` fields that upstream's CRD has and capenter's aws provider does not implement yet, with what
 * to do instead. They stay in the schema (the CRD is upstream's), and {@link refuseUnsupportedEC2NodeClassFields}
 * refuses them, so that a class using one is never launched as if the field were not there.
 */
export const EC2NodeClassUnsupportedFields: Readonly<Record<string, string>> = {};

/**
 * Runtime-only rule (not in the CRD): refuses each `spec` field of {@link EC2NodeClassUnsupportedFields} that is
 * set, as `Forbidden` at `spec.<field>` with the message `capenter does not support <field> yet: <fix>`; and
 * `cpuOptions.nestedVirtualization: enabled` (upstream launches only instance types whose processor lists the
 * `nested-virtualization` feature; capenter's instance-type data does not carry it). `disabled` is implemented.
 */
export function refuseUnsupportedEC2NodeClassFields(v: unknown, ctx: RuleContext): void {
  if (!isObj(v)) return;
  if (isObj(v.cpuOptions) && v.cpuOptions.nestedVirtualization === 'enabled') {
    ctx.fail(
      'capenter: nestedVirtualization enabled unsupported',
      'capenter does not support cpuOptions.nestedVirtualization "enabled" yet: it cannot tell which instance types ' +
        'support nested virtualization; remove it or set "disabled"',
      { path: ['cpuOptions', 'nestedVirtualization'], code: 'FieldValueForbidden' },
    );
  }
  for (const [field, fix] of Object.entries(EC2NodeClassUnsupportedFields)) {
    if (v[field] === undefined) continue;
    ctx.fail(`capenter: ${field} unsupported`, `capenter does not support ${field} yet: ${fix}`, {
      path: [field],
      code: 'FieldValueForbidden',
    });
  }
}

/** EC2NodeClass `spec`. */
export const EC2NodeClassSpecSchema = withRules(
  celAll(EC2NodeClassSpecFields, ec2SpecRules),
  [],
  refuseUnsupportedEC2NodeClassFields,
);

/** EC2NodeClass `status`. */
export const EC2NodeClassStatusSchema = z.strictObject({
  amis: z
    .array(
      z.strictObject({
        deprecated: z.boolean().optional(),
        id: z.string(),
        name: z.string().optional(),
        requirements: z.array(
          z.strictObject({
            key: z.string(),
            operator: z.string(),
            values: z.array(z.string()).optional().meta({ 'x-kubernetes-list-type': 'atomic' }),
          }),
        ),
      }),
    )
    .optional(),
  capacityReservations: z
    .array(
      z.strictObject({
        availabilityZone: z.string(),
        endTime: dateTime().optional(),
        id: pattern(Patterns.capacityReservationID, 'must be a capacity reservation id like "cr-0123"'),
        instanceMatchCriteria: z.enum(['open', 'targeted']),
        instanceType: z.string(),
        interruptible: z.boolean().optional(),
        ownerID: pattern(Patterns.accountID, 'must be a 12-digit AWS account id'),
        reservationType: z.enum(['default', 'capacity-block']).default(DefaultReservationType),
        state: z.enum(['active', 'expiring']).default(DefaultReservationState),
      }),
    )
    .optional(),
  conditions: conditionsSchema(false, false).optional(),
  instanceProfile: z.string().optional(),
  securityGroups: z.array(z.strictObject({ id: z.string(), name: z.string().optional() })).optional(),
  subnets: z
    .array(z.strictObject({ id: z.string(), zone: z.string(), zoneID: z.string().optional() }))
    .optional(),
});

// ---------------------------------------------------------------------------------------------------
// KWOKNodeClass (karpenter.kwok.sh/v1alpha1)
// ---------------------------------------------------------------------------------------------------

/** KWOKNodeClass `spec`. */
export const KWOKNodeClassSpecSchema = z.strictObject({
  nodeRegistrationDelay: pattern(Patterns.duration, Hints.duration)
    .optional()
    .describe('Simulated time between launch and Node registration.'),
});

/** KWOKNodeClass `status` (defaults to a single Ready=True condition). */
export const KWOKNodeClassStatusSchema = z
  .strictObject({ conditions: conditionsSchema(false, false).optional() })
  .default(() => defaultKWOKStatus());

// ---------------------------------------------------------------------------------------------------
// ClusterAPINodeClass (karpenter.cluster.x-k8s.io/v1alpha1), after kubernetes-sigs/karpenter-provider-cluster-api
// ---------------------------------------------------------------------------------------------------

/** A metav1.LabelSelector (`matchLabels` and `matchExpressions`, ANDed). */
export const LabelSelectorSchema = z
  .strictObject({
    matchExpressions: z
      .array(
        z.strictObject({
          key: z.string().describe('key is the label key that the selector applies to.'),
          operator: z
            .enum(['In', 'NotIn', 'Exists', 'DoesNotExist'])
            .describe("operator represents a key's relationship to a set of values."),
          values: z.array(z.string()).optional().describe('values is an array of string values.'),
        }),
      )
      .optional()
      .describe('matchExpressions is a list of label selector requirements. The requirements are ANDed.'),
    matchLabels: z
      .record(z.string(), z.string())
      .optional()
      .describe('matchLabels is a map of {key,value} pairs. The requirements are ANDed.'),
  })
  .describe('A label selector; an empty selector matches everything.');

/** ClusterAPINodeClass `spec`. */
export const ClusterAPINodeClassSpecSchema = z.strictObject({
  scalableResourceSelector: LabelSelectorSchema.optional().describe(
    'scalableResourceSelector selects the Cluster API MachineDeployments that take part in provisioning, ANDed with the label node.cluster.x-k8s.io/karpenter-member.',
  ),
});

/** ClusterAPINodeClass `status`: conditions only (`Ready`, `ValidationSucceeded`, `MachineDeploymentsReady`). */
export const ClusterAPINodeClassStatusSchema = z.strictObject({
  conditions: conditionsSchema(false, false).optional(),
});

// ---------------------------------------------------------------------------------------------------
// NodeOverlay (karpenter.sh/v1alpha1), upstream pkg/apis/v1alpha1/nodeoverlay.go (v1.14.1)
// ---------------------------------------------------------------------------------------------------

/** Upstream's NodeOverlay `priceAdjustment` and `price` patterns, verbatim from karpenter.sh_nodeoverlays.yaml. */
export const NodeOverlayPatterns = {
  priceAdjustment: /^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$/,
  price: /^\d+(\.\d+)?$/,
} as const;

/** Resources a NodeOverlay may not set in `capacity` (upstream `v1.WellKnownResources`). */
export const NodeOverlayRestrictedResources: readonly string[] = [
  'cpu',
  'memory',
  'ephemeral-storage',
  'pods',
];

/** One NodeOverlay requirement: key rules `karpenter.sh` domain and `kubernetes.io/hostname` as upstream's CRD. */
const nodeOverlayRequirementSchema = z.strictObject({
  key: withRules(
    pattern(Patterns.qualifiedName, Hints.qualifiedName).max(316),
    [LabelRules.karpenterDomain, LabelRules.hostname],
    (v, ctx) => {
      if (typeof v !== 'string') return;
      const d = labelDomain(v);
      if (d.endsWith('karpenter.sh') && v !== LabelCapacityType && v !== LabelNodePool)
        ctx.fail(LabelRules.karpenterDomain.rule, LabelRules.karpenterDomain.message, { value: v });
      if (v === LabelHostname) ctx.fail(LabelRules.hostname.rule, LabelRules.hostname.message, { value: v });
    },
  ).describe('The label key that the selector applies to.'),
  operator: z
    .enum(['Gte', 'Lte', 'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'])
    .describe(
      "Represents a key's relationship to a set of values. Valid operators are In, NotIn, Exists, DoesNotExist. Gt, Lt, Gte, and Lte.",
    ),
  values: z
    .array(labelValueSchema())
    .optional()
    .meta({ 'x-kubernetes-list-type': 'atomic' })
    .describe(
      'In/NotIn: one or more values; Exists/DoesNotExist: none; Gt/Lt/Gte/Lte: a single element, interpreted as an integer.',
    ),
});

/** NodeOverlay `spec.requirements` with upstream's three list rules, reported at the offending element. */
const nodeOverlayRequirementsSchema = (() => {
  const rules: CelRule[] = [
    {
      rule: `self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)`,
      message: "requirements with operator 'NotIn' must have a value defined",
    },
    {
      rule: `self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)`,
      message: "requirements with operator 'In' must have a value defined",
    },
    {
      rule: `self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)`,
      message: "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value",
    },
  ];
  const [notInRule, inRule, cmpRule] = rules as [CelRule, CelRule, CelRule];
  return withRules(
    z.array(nodeOverlayRequirementSchema).max(100).meta({ 'x-kubernetes-list-type': 'atomic' }),
    rules,
    (v, ctx) => {
      arr(v).forEach((r, i) => {
        if (!isObj(r)) return;
        const values = Array.isArray(r.values) ? r.values : [];
        if (r.operator === 'NotIn' && values.length === 0)
          ctx.fail(notInRule.rule, notInRule.message, { path: [i, 'values'], code: 'FieldValueRequired' });
        if (r.operator === 'In' && values.length === 0)
          ctx.fail(inRule.rule, inRule.message, { path: [i, 'values'], code: 'FieldValueRequired' });
        if (isComparison(r.operator)) {
          const ok = values.length === 1 && typeof values[0] === 'string' && /^\+?[0-9]+$/.test(values[0]);
          if (!ok) ctx.fail(cmpRule.rule, cmpRule.message, { path: [i, 'values'], value: r.values });
        }
      });
    },
  );
})();

const nodeOverlayCapacityRule = cel(
  `self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))`,
  'invalid resource restricted',
  (v) => !isObj(v) || !Object.keys(v).some((k) => NodeOverlayRestrictedResources.includes(k)),
);

/** NodeOverlay `spec` fields (before the spec-level `price`/`priceAdjustment` exclusivity rule). */
export const NodeOverlaySpecFields = z.strictObject({
  capacity: celAll(ResourceListSchema, [nodeOverlayCapacityRule])
    .optional()
    .describe(
      "Capacity adds extended resources only, and does not replace any existing resources. These extended resources are appended to the node's existing resource list. Note: This field does not modify or override standard resources like cpu, memory, ephemeral-storage, or pods.",
    ),
  price: pattern(NodeOverlayPatterns.price, 'a non-negative decimal number of USD per hour, e.g. "0.05"')
    .optional()
    .describe(
      'Price specifies amount for an instance types that match the specified labels. Users can override prices using a signed float representing the price override',
    ),
  priceAdjustment: pattern(
    NodeOverlayPatterns.priceAdjustment,
    'a signed amount ("+0.1", "-0.05") or a signed percentage ("+10%", "-15%", at least "-100%")',
  )
    .optional()
    .describe(
      'PriceAdjustment specifies the price change for matching instance types. Accepts either: - A fixed price modifier (e.g., -0.5, 1.2) - A percentage modifier (e.g., +10% for increase, -15% for decrease)',
    ),
  requirements: nodeOverlayRequirementsSchema.describe(
    "requirements constrain when this NodeOverlay is applied during scheduling simulations. These requirements can match: - Well-known labels (e.g., node.kubernetes.io/instance-type, karpenter.sh/nodepool) - Custom labels from NodePool's spec.template.labels",
  ),
  weight: z
    .int()
    .min(1)
    .max(10000)
    .optional()
    .meta({ format: 'int32' })
    .describe(
      'Weight defines the priority of this NodeOverlay when overriding node attributes. NodeOverlays with higher numerical weights take precedence over those with lower weights. If no weight is specified, the NodeOverlay is treated as having a weight of 0. When multiple NodeOverlays have identical weights, they are merged in alphabetical order.',
    ),
});

/** NodeOverlay `spec` with upstream's rule "cannot set both 'price' and 'priceAdjustment'". */
export const NodeOverlaySpecSchema = celAll(NodeOverlaySpecFields, [
  cel(
    '!has(self.price) || !has(self.priceAdjustment)',
    "cannot set both 'price' and 'priceAdjustment'",
    (v) => !has(v, 'price') || !has(v, 'priceAdjustment'),
  ),
]);

/** NodeOverlay `status`: conditions (`ValidationSucceeded`, `Ready`), a list-map keyed by `type`. */
export const NodeOverlayStatusSchema = z.strictObject({
  conditions: conditionsSchema(false, true).optional(),
});

// ---------------------------------------------------------------------------------------------------
// Whole objects
// ---------------------------------------------------------------------------------------------------

/** `metadata`: free-form except name/generateName (one is required; names are RFC 1123 subdomains). */
export const ObjectMetaSchema = withRules(
  z.looseObject({
    name: pattern(Patterns.dnsSubdomain, Hints.dnsSubdomain).max(253).optional(),
    generateName: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
  [],
  (v, ctx) => {
    if (isObj(v) && v.name === undefined && v.generateName === undefined) {
      ctx.fail('required', 'name or generateName is required', {
        path: ['name'],
        code: 'FieldValueRequired',
      });
    }
  },
);

/**
 * The zod schema of a whole custom resource: `apiVersion` and `kind` as literals, {@link ObjectMetaSchema}, and
 * the given `spec` and `status` schemas; unknown top-level fields pass. Also what a provider module builds its own
 * NodeClass kind's `schema` with (`ProviderNodeClassKind.api`, src/cloudprovider/module.ts).
 */
export function objectSchema<A extends string, K extends string, Sp extends z.ZodType, St extends z.ZodType>(
  apiVersion: A,
  kind: K,
  spec: Sp,
  status: St,
) {
  return z.looseObject({
    apiVersion: z.literal(apiVersion),
    kind: z.literal(kind),
    metadata: ObjectMetaSchema,
    spec,
    status,
  });
}

/** A whole `karpenter.sh/v1` NodePool. */
export const NodePoolSchema = objectSchema(
  'karpenter.sh/v1',
  'NodePool',
  NodePoolSpecSchema,
  NodePoolStatusSchema.optional(),
);
/** A whole `karpenter.sh/v1` NodeClaim. */
export const NodeClaimSchema = objectSchema(
  'karpenter.sh/v1',
  'NodeClaim',
  NodeClaimSpecSchema,
  NodeClaimStatusSchema.optional(),
);
/** A whole `karpenter.k8s.aws/v1` EC2NodeClass. */
export const EC2NodeClassSchema = objectSchema(
  'karpenter.k8s.aws/v1',
  'EC2NodeClass',
  EC2NodeClassSpecSchema,
  EC2NodeClassStatusSchema.optional(),
);
/** A whole `karpenter.kwok.sh/v1alpha1` KWOKNodeClass. */
export const KWOKNodeClassSchema = objectSchema(
  'karpenter.kwok.sh/v1alpha1',
  'KWOKNodeClass',
  KWOKNodeClassSpecSchema.optional(),
  KWOKNodeClassStatusSchema,
);

/** A whole `karpenter.cluster.x-k8s.io/v1alpha1` ClusterAPINodeClass. */
export const ClusterAPINodeClassSchema = objectSchema(
  'karpenter.cluster.x-k8s.io/v1alpha1',
  'ClusterAPINodeClass',
  ClusterAPINodeClassSpecSchema.optional(),
  ClusterAPINodeClassStatusSchema.optional(),
);

/** A whole `karpenter.sh/v1alpha1` NodeOverlay. */
export const NodeOverlaySchema = objectSchema(
  'karpenter.sh/v1alpha1',
  'NodeOverlay',
  NodeOverlaySpecSchema,
  NodeOverlayStatusSchema.optional(),
);

/** Description of one custom resource: identity, CRD presentation, and its schemas. */
export interface KarpenterKindInfo {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  /** Whole-object schema (validation). */
  schema: z.ZodType;
  /** `spec` and `status` schemas (CRD generation). */
  spec: z.ZodType;
  status: z.ZodType;
  specRequired: boolean;
  description: string;
  /** CRD scope (default `Cluster`, as every Karpenter kind). */
  scope?: 'Cluster' | 'Namespaced';
  /** CRD categories (default `['karpenter']`). */
  categories?: string[];
  /** Labels on the CRD object (e.g. the Cluster API contract label). */
  labels?: Record<string, string>;
  /** Printer columns (default: crds.ts's table for the Karpenter kinds). */
  printerColumns?: Array<{ jsonPath: string; name: string; type: string; priority?: number }>;
}

/** The custom resources capenter validates and ships CRDs for, keyed by `apiVersion/kind`. */
export const KarpenterKinds: Readonly<Record<string, KarpenterKindInfo>> = {
  'karpenter.sh/v1/NodePool': {
    group: 'karpenter.sh',
    version: 'v1',
    kind: 'NodePool',
    plural: 'nodepools',
    singular: 'nodepool',
    shortNames: [],
    schema: NodePoolSchema,
    spec: NodePoolSpecSchema,
    status: NodePoolStatusSchema,
    specRequired: true,
    description: 'NodePool is the Schema for the NodePools API',
  },
  'karpenter.sh/v1/NodeClaim': {
    group: 'karpenter.sh',
    version: 'v1',
    kind: 'NodeClaim',
    plural: 'nodeclaims',
    singular: 'nodeclaim',
    shortNames: [],
    schema: NodeClaimSchema,
    spec: NodeClaimSpecSchema,
    status: NodeClaimStatusSchema,
    specRequired: true,
    description: 'NodeClaim is the Schema for the NodeClaims API',
  },
  'karpenter.k8s.aws/v1/EC2NodeClass': {
    group: 'karpenter.k8s.aws',
    version: 'v1',
    kind: 'EC2NodeClass',
    plural: 'ec2nodeclasses',
    singular: 'ec2nodeclass',
    shortNames: ['ec2nc', 'ec2ncs'],
    schema: EC2NodeClassSchema,
    spec: EC2NodeClassSpecSchema,
    status: EC2NodeClassStatusSchema,
    specRequired: true,
    description: 'EC2NodeClass is the Schema for the EC2NodeClass API',
  },
  'karpenter.kwok.sh/v1alpha1/KWOKNodeClass': {
    group: 'karpenter.kwok.sh',
    version: 'v1alpha1',
    kind: 'KWOKNodeClass',
    plural: 'kwoknodeclasses',
    singular: 'kwoknodeclass',
    shortNames: ['kwoknc', 'kwokncs'],
    schema: KWOKNodeClassSchema,
    spec: KWOKNodeClassSpecSchema,
    status: KWOKNodeClassStatusSchema,
    specRequired: false,
    description: 'KWOKNodeClass is the Schema for the KWOKNodeClass API',
  },
  'karpenter.cluster.x-k8s.io/v1alpha1/ClusterAPINodeClass': {
    group: 'karpenter.cluster.x-k8s.io',
    version: 'v1alpha1',
    kind: 'ClusterAPINodeClass',
    plural: 'clusterapinodeclasses',
    singular: 'clusterapinodeclass',
    shortNames: ['capinc', 'capincs'],
    schema: ClusterAPINodeClassSchema,
    spec: ClusterAPINodeClassSpecSchema,
    status: ClusterAPINodeClassStatusSchema,
    specRequired: false,
    description: 'ClusterAPINodeClass is the Schema for the ClusterAPINodeClass API',
  },
  'karpenter.sh/v1alpha1/NodeOverlay': {
    group: 'karpenter.sh',
    version: 'v1alpha1',
    kind: 'NodeOverlay',
    plural: 'nodeoverlays',
    singular: 'nodeoverlay',
    shortNames: ['overlays'],
    schema: NodeOverlaySchema,
    spec: NodeOverlaySpecSchema,
    status: NodeOverlayStatusSchema,
    specRequired: true,
    description:
      'NodeOverlay is the Schema for the NodeOverlays API (alpha; used only with the NodeOverlay feature gate)',
    printerColumns: [
      { jsonPath: '.status.conditions[?(@.type=="Ready")].status', name: 'Ready', type: 'string' },
      { jsonPath: '.metadata.creationTimestamp', name: 'Age', type: 'date' },
      { jsonPath: '.spec.weight', name: 'Weight', priority: 1, type: 'integer' },
    ],
  },
};
