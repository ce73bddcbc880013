/**
 * `capenter convert -f FILE... [-o yaml|json]` (or `--from-asg NAME` / `--from-launch-template NAME`, see
 * controllers/capi/vintage.ts): turns older Karpenter objects into `karpenter.sh/v1` /
 * `karpenter.k8s.aws/v1` ones, telling for each dropped or moved field what replaces it (stderr, one line each).
 * Handles v1alpha5 Provisioner + v1alpha1 AWSNodeTemplate (including `launchTemplate`), and v1beta1 NodePool,
 * EC2NodeClass and NodeClaim. Other objects pass through unchanged. Output objects are checked with capenter's v1
 * validation; what is still missing (e.g. a role) is reported. Exit 0, or 2 when a file cannot be read or parsed.
 * Sources: Karpenter's v1beta1 and v1 migration guides (karpenter.sh/docs/upgrading/v1-migration, the
 * v1beta1-migration guide) and the v1alpha5/v1beta1/v1 API types. The validation (zod schemas) is imported when
 * the command runs, not with the program (see scripts/build.ts).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { parseAllDocuments, stringify } from 'yaml';
import type { KubeObject } from '../apis/core.ts';
import type { validateObject } from '../apis/validation.ts';
import { KubeletCompatibilityAnnotation, type KubeletPlan, planKubeletSplit } from './convert-kubelet.ts';

/** One note about a converted object: what was dropped or moved, and what replaces it. */
export interface ConvertNote {
  /** `Kind/name` of the input object. */
  object: string;
  /** Field path in the input (`spec.ttlSecondsAfterEmpty`). */
  field: string;
  /** What replaces it (or why it is gone). */
  message: string;
}

/** Result of {@link convertObjects}. */
export interface ConvertResult {
  objects: KubeObject[];
  notes: ConvertNote[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const EC2Group = 'karpenter.k8s.aws';

/** AMI family → v1 alias (`amiSelectorTerms: [{alias}]`); Ubuntu and Custom have none. */
const FamilyAlias: Record<string, string> = {
  AL2: 'al2@latest',
  AL2023: 'al2023@latest',
  Bottlerocket: 'bottlerocket@latest',
  Windows2019: 'windows2019@latest',
  Windows2022: 'windows2022@latest',
  Windows2025: 'windows2025@latest',
};

function seconds(n: unknown): string | undefined {
  return typeof n === 'number' && Number.isFinite(n) ? `${Math.round(n)}s` : undefined;
}

/** v1alpha5/v1alpha1 map selectors (`aws-ids`, `aws::name`, `aws::owners`, tags) → v1 selector terms. */
function selectorTerms(sel: unknown, kind: 'subnet' | 'sg' | 'ami'): Obj[] | undefined {
  if (!isObj(sel)) return undefined;
  const terms: Obj[] = [];
  const tags: Record<string, string> = {};
  for (const [k, v] of Object.entries(sel)) {
    const val = String(v);
    if (k === 'aws-ids' || k === 'aws::ids') for (const id of val.split(',')) terms.push({ id: id.trim() });
    else if (kind === 'ami' && k === 'aws::name') terms.push({ name: val });
    else if (kind === 'ami' && k === 'aws::owners') {
      // owners apply to every name/tag term; attached below
    } else if (kind === 'sg' && k === 'aws::name') terms.push({ name: val });
    else tags[k] = val;
  }
  if (Object.keys(tags).length > 0) terms.push({ tags });
  const owners = isObj(sel) ? sel['aws::owners'] : undefined;
  if (kind === 'ami' && owners !== undefined) {
    const list = String(owners)
      .split(',')
      .map((o) => o.trim());
    const base = terms.filter((t) => !t.id);
    const out: Obj[] = terms.filter((t) => t.id);
    for (const t of base.length > 0 ? base : [{}]) for (const o of list) out.push({ ...t, owner: o });
    return out;
  }
  return terms;
}

/** `{apiVersion, kind, name}` → `{group, kind, name}`. */
function nodeClassRef(ref: unknown): Obj | undefined {
  if (!isObj(ref)) return undefined;
  const apiVersion = typeof ref.apiVersion === 'string' ? ref.apiVersion : `${EC2Group}/v1`;
  const kind = typeof ref.kind === 'string' ? ref.kind : 'EC2NodeClass';
  return {
    group: typeof ref.group === 'string' ? ref.group : apiVersion.split('/')[0],
    kind: kind === 'AWSNodeTemplate' ? 'EC2NodeClass' : kind,
    name: ref.name,
  };
}

function renameRequirementKeys(reqs: unknown, note: (f: string, m: string) => void): Obj[] {
  return (Array.isArray(reqs) ? reqs : []).filter(isObj).map((r) => {
    if (r.key === 'karpenter.sh/provisioner-name') {
      note('requirements[karpenter.sh/provisioner-name]', 'renamed to karpenter.sh/nodepool');
      return { ...r, key: 'karpenter.sh/nodepool' };
    }
    return { ...r };
  });
}

/** Converts EC2NodeClass-like specs (v1alpha1 AWSNodeTemplate, v1beta1 EC2NodeClass) to v1. */
function ec2Spec(spec: Obj, note: (f: string, m: string) => void, alpha: boolean): Obj {
  const out: Obj = {};
  const copy = [
    'amiFamily',
    'role',
    'instanceProfile',
    'userData',
    'tags',
    'metadataOptions',
    'blockDeviceMappings',
    'detailedMonitoring',
    'associatePublicIPAddress',
    'instanceStorePolicy',
    'context',
    'kubelet',
  ];
  for (const k of copy) if (spec[k] !== undefined) out[k] = structuredClone(spec[k]);
  if (alpha) {
    const subnets = selectorTerms(spec.subnetSelector, 'subnet');
    if (subnets) out.subnetSelectorTerms = subnets;
    const sgs = selectorTerms(spec.securityGroupSelector, 'sg');
    if (sgs) out.securityGroupSelectorTerms = sgs;
    const amis = selectorTerms(spec.amiSelector, 'ami');
    if (amis) out.amiSelectorTerms = amis;
    for (const f of ['subnetSelector', 'securityGroupSelector', 'amiSelector'] as const)
      if (spec[f] !== undefined) note(`spec.${f}`, `now spec.${f}Terms (list of id/name/tags terms)`);
    if (spec.launchTemplate !== undefined) {
      note(
        'spec.launchTemplate',
        `launch templates were removed in v1beta1: Karpenter generates them. Copy the template's AMI to amiSelectorTerms (id), its security groups to securityGroupSelectorTerms, its user data to userData and its instance profile to instanceProfile — or run capenter's EC2NodeClass import from the launch template "${String(spec.launchTemplate)}" (needs AWS access)`,
      );
    }
    if (spec.apiVersion !== undefined) note('spec.apiVersion', 'dropped');
  } else {
    for (const k of ['subnetSelectorTerms', 'securityGroupSelectorTerms', 'amiSelectorTerms'])
      if (spec[k] !== undefined) out[k] = structuredClone(spec[k]);
  }
  const family = typeof out.amiFamily === 'string' ? out.amiFamily : undefined;
  if (family === 'Ubuntu') {
    note(
      'spec.amiFamily',
      'Ubuntu was removed in v1: use amiFamily AL2 with amiSelectorTerms naming your Ubuntu AMIs (or Custom with your own userData)',
    );
    out.amiFamily = 'AL2';
  }
  if (!Array.isArray(out.amiSelectorTerms) || out.amiSelectorTerms.length === 0) {
    const alias = FamilyAlias[String(out.amiFamily ?? 'AL2')];
    if (alias) {
      out.amiSelectorTerms = [{ alias }];
      note(
        'spec.amiSelectorTerms',
        `required in v1; set to the alias ${alias} (the family's latest AMI, as before)`,
      );
      if (out.amiFamily && FamilyAlias[String(out.amiFamily)]) delete out.amiFamily;
    } else note('spec.amiSelectorTerms', 'required in v1: add terms selecting your AMIs');
  }
  if (!out.role && !out.instanceProfile)
    note(
      'spec.role',
      'v1 needs spec.role (or spec.instanceProfile); older versions used the global defaultInstanceProfile setting',
    );
  return out;
}

/** Records a conversion note on `field` (a path in the converted object). */
type Note = (field: string, message: string) => void;

/**
 * A v1alpha5 Provisioner → v1 NodePool: requirements renamed, `providerRef` → `nodeClassRef` (the EC2NodeClass
 * of the same name when absent), TTLs → `expireAfter` and the disruption policy, `limits.resources` → `limits`;
 * kubelet and inline provider settings are noted as moved. `meta` is the cleaned metadata.
 */
function convertProvisioner(
  obj: KubeObject,
  spec: Obj,
  meta: Obj,
  plan: KubeletPlan,
  note: Note,
): KubeObject {
  const template: Obj = { requirements: renameRequirementKeys(spec.requirements, note) };
  for (const k of ['taints', 'startupTaints'] as const) if (spec[k]) template[k] = structuredClone(spec[k]);
  const ref = repoint(nodeClassRef(spec.providerRef), plan, obj, note);
  template.nodeClassRef = ref ?? { group: EC2Group, kind: 'EC2NodeClass', name: obj.metadata?.name };
  if (!ref)
    note(
      'spec.providerRef',
      `missing: the NodePool points to EC2NodeClass "${obj.metadata?.name}"; create it (convert the inline spec.provider into it)`,
    );
  template.expireAfter = seconds(spec.ttlSecondsUntilExpired) ?? 'Never';
  if (spec.ttlSecondsUntilExpired !== undefined)
    note('spec.ttlSecondsUntilExpired', 'now spec.template.spec.expireAfter');
  const disruption: Obj = {};
  const consolidation = isObj(spec.consolidation) ? spec.consolidation : undefined;
  if (consolidation?.enabled === true) {
    disruption.consolidationPolicy = 'WhenEmptyOrUnderutilized';
    disruption.consolidateAfter = '0s';
    note('spec.consolidation.enabled', 'now spec.disruption.consolidationPolicy: WhenEmptyOrUnderutilized');
  } else {
    disruption.consolidationPolicy = 'WhenEmpty';
    disruption.consolidateAfter = seconds(spec.ttlSecondsAfterEmpty) ?? 'Never';
    if (spec.ttlSecondsAfterEmpty !== undefined)
      note(
        'spec.ttlSecondsAfterEmpty',
        'now spec.disruption.consolidationPolicy: WhenEmpty + consolidateAfter',
      );
  }
  const metadata: Obj = {};
  if (spec.labels) metadata.labels = structuredClone(spec.labels);
  if (spec.annotations) metadata.annotations = structuredClone(spec.annotations);
  const out: Obj = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: meta,
    spec: {
      template: { ...(Object.keys(metadata).length > 0 ? { metadata } : {}), spec: template },
      disruption,
      ...(isObj(spec.limits) && isObj(spec.limits.resources)
        ? { limits: structuredClone(spec.limits.resources) }
        : {}),
      ...(spec.weight !== undefined ? { weight: spec.weight } : {}),
    },
  };
  if (spec.limits !== undefined) note('spec.limits.resources', 'now spec.limits');
  if (spec.kubeletConfiguration !== undefined)
    note(
      'spec.kubeletConfiguration',
      `moved to the EC2NodeClass: set spec.kubelet on EC2NodeClass "${String((template.nodeClassRef as Obj).name)}" (containerRuntime is gone: containerd only)`,
    );
  if (spec.provider !== undefined)
    note(
      'spec.provider',
      'inline AWS settings are gone: put them in an EC2NodeClass referenced by nodeClassRef',
    );
  return out as KubeObject;
}

/**
 * A v1alpha1 AWSNodeTemplate → v1 EC2NodeClass (see `ec2Spec`), with the kubelet settings of the Provisioners
 * that reference it (without `containerRuntime`); one class per distinct kubelet (see `classVariants`).
 */
function convertAWSNodeTemplate(spec: Obj, meta: Obj, plan: KubeletPlan, note: Note): KubeObject[] {
  const out = {
    apiVersion: `${EC2Group}/v1`,
    kind: 'EC2NodeClass',
    metadata: meta,
    spec: ec2Spec(spec, note, true),
  };
  return classVariants(out as KubeObject, plan, 'spec.kubeletConfiguration', note);
}

/**
 * The EC2NodeClasses to emit for one converted class `base`: one per distinct kubelet of the pools pointing to
 * it (see `planKubeletSplit`), each with that kubelet as `spec.kubelet`; `base` itself when no pool references
 * it. A split is explained in a note naming each pool and its new class. `source` is the pools' kubelet field.
 */
function classVariants(base: KubeObject, plan: KubeletPlan, source: string, note: Note): KubeObject[] {
  const variants = plan.classes.get(base.metadata?.name ?? '');
  if (!variants) return [base];
  const spec = (base as Obj).spec as Obj;
  if (variants.length > 1)
    note(
      'spec.kubelet',
      `split into ${variants.length} EC2NodeClasses (${variants.map((v) => `"${v.name}" for ${v.pools.join(', ')}`).join('; ')}): these pools set different kubelet settings and v1 keeps kubelet on the EC2NodeClass; the re-pointed pools' nodes will drift and be replaced once`,
    );
  return variants.map((v) => {
    const out = structuredClone(base) as KubeObject & { spec: Obj };
    out.metadata = { ...out.metadata, name: v.name };
    const kubelet = { ...(isObj(spec.kubelet) ? spec.kubelet : {}), ...(v.kubelet ?? {}) };
    if (Object.keys(kubelet).length > 0) out.spec.kubelet = kubelet;
    else delete out.spec.kubelet;
    if (v.kubelet)
      for (const pool of v.pools)
        note(
          'spec.kubelet',
          `${v.name === base.metadata?.name ? '' : `EC2NodeClass "${v.name}": `}filled from ${pool.replace('/', ' "')}" ${source}`,
        );
    return out;
  });
}

/** Re-points a converted pool's `nodeClassRef` to the class its kubelet landed in (see `planKubeletSplit`). */
function repoint(ref: Obj | undefined, plan: KubeletPlan, pool: KubeObject, note: Note): Obj | undefined {
  const target = plan.poolClass.get(`${pool.kind}/${pool.metadata?.name ?? '?'}`);
  if (!ref || target === undefined || target === ref.name) return ref;
  note(
    'nodeClassRef.name',
    `now "${target}" (was "${String(ref.name)}"): pools sharing "${String(ref.name)}" set different kubelet settings, so each kubelet got its own EC2NodeClass`,
  );
  return { ...ref, name: target };
}

/**
 * A v1beta1 EC2NodeClass → v1 (see `ec2Spec`), with the `spec.template.spec.kubelet` of the v1beta1 NodePools
 * that reference it; one class per distinct kubelet (see `classVariants`).
 */
function convertV1beta1EC2NodeClass(spec: Obj, meta: Obj, plan: KubeletPlan, note: Note): KubeObject[] {
  const out = {
    apiVersion: `${EC2Group}/v1`,
    kind: 'EC2NodeClass',
    metadata: meta,
    spec: ec2Spec(spec, note, false),
  };
  return classVariants(out as KubeObject, plan, 'spec.template.spec.kubelet', note);
}

/**
 * A v1beta1 NodePool or NodeClaim → v1: kubelet dropped (noted: it moves to the EC2NodeClass, and for a NodePool
 * is kept as JSON in the `compatibility.karpenter.sh/v1beta1-kubelet-conversion` annotation as upstream's
 * conversion webhook does), `nodeClassRef` (re-pointed when the class was split, see `planKubeletSplit`; a
 * NodeClaim follows its `karpenter.sh/nodepool` label) and requirement keys converted; for a NodePool,
 * `disruption.expireAfter` moves to the template, `WhenUnderutilized` becomes `WhenEmptyOrUnderutilized` and
 * `consolidateAfter` defaults to `0s`.
 */
function convertV1beta1NodePoolOrClaim(
  obj: KubeObject,
  spec: Obj,
  meta: Obj,
  plan: KubeletPlan,
  note: Note,
): KubeObject {
  const isPool = obj.kind === 'NodePool';
  const tspec = structuredClone(
    (isPool ? ((spec.template as Obj | undefined)?.spec as Obj | undefined) : spec) ?? {},
  ) as Obj;
  const pool = isPool
    ? obj
    : { kind: 'NodePool', metadata: { name: obj.metadata?.labels?.['karpenter.sh/nodepool'] } };
  tspec.nodeClassRef = repoint(nodeClassRef(tspec.nodeClassRef), plan, pool as KubeObject, note);
  if (tspec.kubelet !== undefined) {
    note(
      isPool ? 'spec.template.spec.kubelet' : 'spec.kubelet',
      `moved to EC2NodeClass "${String((tspec.nodeClassRef as Obj | undefined)?.name ?? '')}" spec.kubelet (convert it together with this object to carry it over)${isPool ? `; also kept as JSON in the ${KubeletCompatibilityAnnotation} annotation, as upstream's conversion webhook does (only Karpenter v1.0 and rollbacks read it; remove it before upgrading upstream Karpenter to v1.1, which refuses to start while a NodePool carries it)` : ''}`,
    );
    if (isPool)
      meta.annotations = {
        ...(isObj(meta.annotations) ? meta.annotations : {}),
        [KubeletCompatibilityAnnotation]: JSON.stringify(tspec.kubelet),
      };
    delete tspec.kubelet;
  }
  tspec.requirements = renameRequirementKeys(tspec.requirements, note);
  if (!isPool) {
    delete (tspec as Obj).resources;
    if (spec.resources !== undefined) tspec.resources = structuredClone(spec.resources);
    return { apiVersion: 'karpenter.sh/v1', kind: 'NodeClaim', metadata: meta, spec: tspec } as KubeObject;
  }
  const d = structuredClone((spec.disruption as Obj | undefined) ?? {});
  if (d.expireAfter !== undefined) {
    tspec.expireAfter = d.expireAfter;
    delete d.expireAfter;
    note('spec.disruption.expireAfter', 'now spec.template.spec.expireAfter');
  }
  if (d.consolidationPolicy === 'WhenUnderutilized') {
    d.consolidationPolicy = 'WhenEmptyOrUnderutilized';
    note('spec.disruption.consolidationPolicy', 'WhenUnderutilized is now WhenEmptyOrUnderutilized');
  }
  if (d.consolidateAfter === undefined) d.consolidateAfter = '0s';
  const template = structuredClone((spec.template as Obj | undefined) ?? {});
  template.spec = tspec;
  const out: Obj = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: meta,
    spec: { ...structuredClone(spec), template, disruption: d },
  };
  return out as KubeObject;
}

/**
 * Converts one object; unknown kinds pass through. `related` (the other input objects) decides where kubelet
 * settings go (`plan`, computed from `related` when not given): a class may come out as several EC2NodeClasses.
 * Pure.
 */
export function convertObject(
  obj: KubeObject,
  related: readonly KubeObject[] = [],
  plan: KubeletPlan = planKubeletSplit(related),
): ConvertResult {
  const notes: ConvertNote[] = [];
  const id = `${obj.kind}/${obj.metadata?.name ?? '?'}`;
  const note = (field: string, message: string): void => {
    notes.push({ object: id, field, message });
  };
  const meta = { ...structuredClone(obj.metadata ?? {}) } as Obj;
  delete meta.resourceVersion;
  delete meta.uid;
  delete meta.creationTimestamp;
  delete meta.generation;
  delete meta.managedFields;
  const spec = (isObj((obj as Obj).spec) ? (obj as Obj).spec : {}) as Obj;

  let out: KubeObject[] = [obj];
  if (obj.apiVersion === 'karpenter.sh/v1alpha5' && obj.kind === 'Provisioner')
    out = [convertProvisioner(obj, spec, meta, plan, note)];
  else if (obj.apiVersion === 'karpenter.k8s.aws/v1alpha1' && obj.kind === 'AWSNodeTemplate')
    out = convertAWSNodeTemplate(spec, meta, plan, note);
  else if (obj.apiVersion === 'karpenter.k8s.aws/v1beta1' && obj.kind === 'EC2NodeClass')
    out = convertV1beta1EC2NodeClass(spec, meta, plan, note);
  else if (obj.apiVersion === 'karpenter.sh/v1beta1' && (obj.kind === 'NodePool' || obj.kind === 'NodeClaim'))
    out = [convertV1beta1NodePoolOrClaim(obj, spec, meta, plan, note)];
  return { objects: out, notes };
}

/**
 * Converts every object (related objects are used to move kubelet settings into NodeClasses) and reports what
 * `validate` (capenter's v1 validation, `validateObject` of `apis/validation.ts`) still finds missing. Pure.
 */
export function convertObjects(objs: readonly KubeObject[], validate: typeof validateObject): ConvertResult {
  const out: ConvertResult = { objects: [], notes: [] };
  const plan = planKubeletSplit(objs);
  for (const o of objs) {
    const r = convertObject(o, objs, plan);
    out.objects.push(...r.objects);
    out.notes.push(...r.notes);
  }
  for (const o of out.objects) {
    const v = validate(o);
    if (!v.ok)
      for (const i of v.issues)
        out.notes.push({
          object: `${o.kind}/${o.metadata?.name}`,
          field: i.fieldPath ?? '',
          message: `still needed: ${i.message}`,
        });
  }
  return out;
}

function files(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .filter((f) => /\.(ya?ml|json)$/.test(f))
    .sort()
    .map((f) => join(path, f));
}

/** Flags of `capenter convert`. */
export interface ConvertFlags {
  filename?: string[];
  output?: string;
  /** Derive an EC2NodeClass + NodePool from this Auto Scaling group (AWS credentials/endpoint from the SDK's environment). */
  fromAsg?: string;
  /** Derive them from this launch template (its default version). */
  fromLaunchTemplate?: string;
  /** Region for --from-asg / --from-launch-template (default: the SDK's, e.g. AWS_REGION). */
  region?: string;
  /** Name of the derived objects (default: the group or template name). */
  name?: string;
}

function print(objects: KubeObject[], output: string, io: { stdout: (t: string) => void }): void {
  io.stdout(
    output === 'json'
      ? `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }, null, 2)}\n`
      : objects.map((o) => `---\n${stringify(o, { lineWidth: 0 })}`).join(''),
  );
}

/** Runs `capenter convert`; returns the exit code (0, 1 on AWS errors, 2 on bad input). */
export async function runConvert(
  flags: ConvertFlags,
  io: { stdout: (t: string) => void; stderr: (t: string) => void },
): Promise<number> {
  const output = flags.output ?? 'yaml';
  if (output !== 'yaml' && output !== 'json') {
    io.stderr(`error: --output must be yaml or json, got "${output}"\n`);
    return 2;
  }
  if (flags.fromAsg || flags.fromLaunchTemplate) {
    const { importVintage, vintageList } = await import('../cloudprovider/aws/vintage.ts');
    const cfg = flags.region ? { region: flags.region } : {};
    try {
      const r = await importVintage(
        flags.fromAsg
          ? { autoScalingGroup: flags.fromAsg }
          : { launchTemplate: flags.fromLaunchTemplate as string },
        { ec2: cfg, autoscaling: cfg, ...(flags.name ? { name: flags.name } : {}) },
      );
      for (const n of r.notes) io.stderr(`note: ${n}\n`);
      print(vintageList(r), output, io);
      return 0;
    } catch (err) {
      io.stderr(`error: ${(err as Error).message}\n`);
      return 1;
    }
  }
  if (!flags.filename || flags.filename.length === 0) {
    io.stderr(
      'error: give the manifests to convert with -f FILE (repeatable), or --from-asg / --from-launch-template\n',
    );
    return 2;
  }
  const objs: KubeObject[] = [];
  for (const p of flags.filename) {
    try {
      for (const f of files(p))
        for (const doc of parseAllDocuments(readFileSync(f, 'utf8'))) {
          if (doc.errors.length > 0) throw new Error(`${f}: ${doc.errors[0]?.message}`);
          const o = doc.toJS() as KubeObject | null;
          if (o && typeof o === 'object' && o.kind) objs.push(o);
        }
    } catch (err) {
      io.stderr(`error: ${(err as Error).message}\n`);
      return 2;
    }
  }
  const { validateObject } = await import('../apis/validation.ts');
  const r = convertObjects(objs, validateObject);
  for (const n of r.notes) io.stderr(`${n.object}: ${n.field}: ${n.message}\n`);
  print(r.objects, output, io);
  return 0;
}

/** Registers `capenter convert`. */
export function registerConvertCommand(program: Command): void {
  program
    .command('convert')
    .description(
      'convert v1alpha5 Provisioner/AWSNodeTemplate and v1beta1 NodePool/EC2NodeClass/NodeClaim manifests to Karpenter v1, explaining every dropped field',
    )
    .option(
      '-f, --filename <path>',
      'manifest file or folder (repeatable)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('-o, --output <format>', 'yaml|json', 'yaml')
    .option(
      '--from-asg <name>',
      'derive an EC2NodeClass + NodePool from an existing Auto Scaling group (vintage clusters)',
    )
    .option('--from-launch-template <name>', 'derive them from a launch template (its default version)')
    .option('--region <region>', 'AWS region for --from-asg / --from-launch-template (default: AWS_REGION)')
    .option('--name <name>', 'name of the derived EC2NodeClass and NodePool')
    .action(async (flags: ConvertFlags) => {
      process.exitCode = await runConvert(flags, {
        stdout: (t) => process.stdout.write(t),
        stderr: (t) => process.stderr.write(t),
      });
    });
}
