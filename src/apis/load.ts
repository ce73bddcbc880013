/**
 * The manifest loader behind `capenter simulate -f` and `capenter start -f`: multi-document YAML (or JSON)
 * from files, folders and stdin, turned into Kubernetes objects.
 *
 * - Karpenter kinds are validated and defaulted (`validateObject`); an invalid object becomes a
 *   {@link LoadError} and is dropped while the rest of the input still loads.
 * - Known built-in kinds (see {@link BuiltinKinds}) are kept as they are.
 * - Any other kind is counted in `unknownKinds` (not an error) and dropped unless `keepUnknownKinds`.
 * - YAML syntax errors are reported per document with line and column; empty documents are skipped;
 *   `kind: List` (and `*List` kinds with `items`) and top-level sequences are flattened.
 *
 * Every error message names the file and line, the document index (0-based), the object, the field path
 * and the rule, e.g.
 * `pools.yaml:14 (document 1): NodePool "general": spec.weight: Invalid value 0: must be greater than or
 * equal to 1 (rule: minimum: 1)`.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { type Document, LineCounter, parseAllDocuments } from 'yaml';
import type { KubeObject } from './core.ts';
import { providerKindsOf } from './provider-kinds.ts';
import { quantityIssues } from './quantityfields.ts';
import { apiGroup, KarpenterGroups, objectName, validateObject } from './validation.ts';

/** An object read from a manifest, with where it came from. */
export interface LoadedObject {
  /** File path as given (or found in a folder), `<stdin>` for standard input. */
  file: string;
  /** 0-based index of the YAML document in the file. */
  index: number;
  /** 0-based position in `items` when the document was a List (or a top-level sequence). */
  item?: number;
  /** 1-based line where the object starts. */
  line?: number;
  object: KubeObject;
}

/** A problem with one document, object or path. `message` is complete and ready to print. */
export interface LoadError {
  file: string;
  /** 0-based document index; -1 for problems with the path itself (missing file, unreadable folder). */
  index: number;
  item?: number;
  /** 1-based line of the offending field (or document) when known. */
  line?: number;
  kind?: string;
  name?: string;
  fieldPath?: string;
  /** The rule broken (CEL rule, `enum`, `pattern: ...`, `yaml`, ...). */
  rule?: string;
  /** Kubernetes field error type for validation failures (`FieldValueInvalid`, ...). */
  code?: string;
  message: string;
}

/** Everything read from some input. */
export interface LoadResult {
  objects: LoadedObject[];
  errors: LoadError[];
  /** Objects of kinds capenter does not use, counted by kind (`{Service: 3, ConfigMap: 1}`). */
  unknownKinds: Record<string, number>;
  /** Things worth telling the user that are not errors (an empty file or stream). */
  notices?: string[];
}

/** Options of {@link parseManifests} and {@link loadManifestPaths}. */
export interface LoadOptions {
  /** Stream read for the path `-` (default: `process.stdin`). */
  stdin?: NodeJS.ReadableStream;
  /** Keep objects of unknown kinds in `objects` too (they are still counted). Default false. */
  keepUnknownKinds?: boolean;
}

/**
 * Built-in (and Cluster API) kinds the loader keeps, mapped to the API groups they are accepted from
 * (`""` is the core group). Karpenter kinds are handled separately (validated and defaulted).
 */
export const BuiltinKinds: ReadonlyMap<string, readonly string[]> = new Map<string, readonly string[]>([
  ['Pod', ['']],
  ['Node', ['']],
  ['Namespace', ['']],
  ['PersistentVolumeClaim', ['']],
  ['PersistentVolume', ['']],
  ['ReplicationController', ['']],
  ['Secret', ['']],
  // kept so `capenter start` creates them: the API server refuses pods whose ServiceAccount is missing
  ['ServiceAccount', ['']],
  ['LimitRange', ['']],
  ['ResourceQuota', ['']],
  ['Deployment', ['apps']],
  ['StatefulSet', ['apps']],
  ['ReplicaSet', ['apps']],
  ['DaemonSet', ['apps']],
  ['Job', ['batch']],
  ['CronJob', ['batch']],
  ['PodDisruptionBudget', ['policy']],
  ['StorageClass', ['storage.k8s.io']],
  ['CSINode', ['storage.k8s.io']],
  ['VolumeAttachment', ['storage.k8s.io']],
  ['PriorityClass', ['scheduling.k8s.io']],
  ['RuntimeClass', ['node.k8s.io']],
  ['CustomResourceDefinition', ['apiextensions.k8s.io']],
  ['Cluster', ['cluster.x-k8s.io']],
  ['Machine', ['cluster.x-k8s.io']],
  ['MachineSet', ['cluster.x-k8s.io']],
  ['MachineDeployment', ['cluster.x-k8s.io']],
  ['MachinePool', ['cluster.x-k8s.io']],
  ['KubeadmConfig', ['bootstrap.cluster.x-k8s.io']],
  ['KubeadmConfigTemplate', ['bootstrap.cluster.x-k8s.io']],
  ['AWSCluster', ['infrastructure.cluster.x-k8s.io']],
  ['AWSMachine', ['infrastructure.cluster.x-k8s.io']],
  ['AWSMachineTemplate', ['infrastructure.cluster.x-k8s.io']],
  ['AWSMachinePool', ['infrastructure.cluster.x-k8s.io']],
  ['AWSManagedMachinePool', ['infrastructure.cluster.x-k8s.io']],
  ['KarpenterMachinePool', ['infrastructure.cluster.x-k8s.io']],
  ['ClusterAPINodeClass', ['karpenter.cluster.x-k8s.io']],
]);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function where(file: string, index: number, line: number | undefined, item: number | undefined): string {
  const loc = line !== undefined ? `${file}:${line}` : file;
  return index < 0 ? loc : `${loc} (document ${index}${item !== undefined ? `, item ${item}` : ''})`;
}

function jsType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a sequence';
  return `a ${typeof v}`;
}

/** One YAML document being loaded: where its objects and errors go, and how a field path maps to a line. */
interface DocumentScope {
  file: string;
  /** 0-based document index in the file. */
  index: number;
  result: LoadResult;
  opts: LoadOptions;
  /** 1-based line of the node at `path` (or of its nearest ancestor present; else the document's line). */
  lineOf: (path: ReadonlyArray<string | number>) => number | undefined;
}

/** The location fields of a {@link LoadError} or {@link LoadedObject} at `line` of item `item` in `s`. */
function locationIn(s: DocumentScope, item: number | undefined, line: number | undefined) {
  return {
    file: s.file,
    index: s.index,
    ...(item !== undefined ? { item } : {}),
    ...(line !== undefined ? { line } : {}),
  };
}

/**
 * Loads one parsed document into `result`: its first YAML error (later ones are usually consequences of it),
 * or its value (a sequence: each element; a mapping: one object; empty documents are skipped).
 */
function loadDocument(
  doc: Document.Parsed,
  index: number,
  file: string,
  lineAt: (offset: number | undefined) => number | undefined,
  result: LoadResult,
  opts: LoadOptions,
): void {
  const contentsStart = (doc.contents as { range?: [number, number, number] } | null)?.range?.[0];
  const docLine = lineAt(contentsStart ?? doc.range?.[0]);
  if (doc.errors.length > 0) {
    for (const err of doc.errors.slice(0, 1)) {
      const pos = err.linePos?.[0];
      const first = (err.message.split('\n')[0] ?? err.message).replace(/:$/, '');
      result.errors.push({
        file,
        index,
        ...(pos ? { line: pos.line } : docLine !== undefined ? { line: docLine } : {}),
        rule: 'yaml',
        message: `${where(file, index, pos?.line ?? docLine, undefined)}: YAML syntax error: ${first}`,
      });
    }
    return;
  }
  if (doc.contents === null) return; // empty document
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 1000 });
  } catch (e) {
    result.errors.push({
      file,
      index,
      ...(docLine !== undefined ? { line: docLine } : {}),
      rule: 'yaml',
      message: `${where(file, index, docLine, undefined)}: cannot convert YAML: ${(e as Error).message}`,
    });
    return;
  }
  if (value === null || value === undefined) return;
  const lineOf = (path: ReadonlyArray<string | number>): number | undefined => {
    const p = [...path];
    while (p.length > 0) {
      const node = doc.getIn(p, true) as { range?: [number, number, number] } | undefined;
      if (node && typeof node === 'object' && node.range) return lineAt(node.range[0]);
      p.pop();
    }
    return docLine;
  };
  const scope: DocumentScope = { file, index, result, opts, lineOf };
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      handleObject(scope, v, [i], i);
    });
  } else {
    handleObject(scope, value, [], undefined);
  }
}

/**
 * Loads one value found at `prefix` in a document (item `item` of a List or sequence): not a mapping → an
 * error; a `*List` with `items` → each item; a Karpenter kind (or no apiVersion/kind) → validated; a known
 * built-in kind → checked; anything else → counted in `unknownKinds` (kept with `keepUnknownKinds`).
 */
function handleObject(
  s: DocumentScope,
  v: unknown,
  prefix: Array<string | number>,
  item: number | undefined,
): void {
  const line = s.lineOf(prefix);
  if (!isObj(v)) {
    s.result.errors.push({
      ...locationIn(s, item, line),
      rule: 'type: object',
      message: `${where(s.file, s.index, line, item)}: not a Kubernetes object: expected a mapping with apiVersion and kind, got ${jsType(v)}`,
    });
    return;
  }
  const kind = typeof v.kind === 'string' ? v.kind : undefined;
  if (kind?.endsWith('List') && Array.isArray(v.items)) {
    v.items.forEach((it, j) => {
      handleObject(s, it, [...prefix, 'items', j], j);
    });
    return;
  }
  const apiVersion = typeof v.apiVersion === 'string' ? v.apiVersion : undefined;
  const group = apiVersion !== undefined ? apiGroup(apiVersion) : undefined;
  const karpenter = KarpenterGroups.includes(group ?? '') || providerKindsOf(group ?? '').length > 0;
  if (apiVersion === undefined || kind === undefined || karpenter) {
    loadKarpenterObject(s, v, prefix, item);
    return;
  }
  if (BuiltinKinds.get(kind)?.includes(group ?? '')) {
    loadBuiltinObject(s, v, kind, prefix, item);
    return;
  }
  s.result.unknownKinds[kind] = (s.result.unknownKinds[kind] ?? 0) + 1;
  if (s.opts.keepUnknownKinds)
    s.result.objects.push({ ...locationIn(s, item, line), object: v as KubeObject });
}

/**
 * A Karpenter object (or one without apiVersion or kind): validated and defaulted (`validateObject`), or each
 * of its issues reported at its field's line, in line order.
 */
function loadKarpenterObject(
  s: DocumentScope,
  v: Obj,
  prefix: Array<string | number>,
  item: number | undefined,
): void {
  const r = validateObject(v as KubeObject);
  if (r.ok) {
    s.result.objects.push({ ...locationIn(s, item, s.lineOf(prefix)), object: r.object });
    return;
  }
  const located = r.issues.map((issue) => ({ issue, l: s.lineOf([...prefix, ...issue.path]) }));
  located.sort((a, b) => (a.l ?? 0) - (b.l ?? 0));
  for (const { issue, l } of located) {
    s.result.errors.push({
      ...locationIn(s, item, l),
      kind: issue.kind,
      name: issue.name,
      fieldPath: issue.fieldPath,
      rule: issue.rule,
      code: issue.code,
      message: `${where(s.file, s.index, l, item)}: ${issue.message} (rule: ${issue.rule})`,
    });
  }
}

/**
 * A built-in kind: kept as it is unless it has neither `metadata.name` nor `metadata.generateName`, or a field
 * holds an invalid quantity (the API server rejects the whole object: each field is reported, the object is
 * kept out).
 */
function loadBuiltinObject(
  s: DocumentScope,
  v: Obj,
  kind: string,
  prefix: Array<string | number>,
  item: number | undefined,
): void {
  const at = (l: number | undefined) => where(s.file, s.index, l, item);
  const meta = isObj(v.metadata) ? v.metadata : undefined;
  if (!meta || (typeof meta.name !== 'string' && typeof meta.generateName !== 'string')) {
    const l = s.lineOf([...prefix, 'metadata']);
    s.result.errors.push({
      ...locationIn(s, item, l),
      kind,
      name: objectName(v),
      fieldPath: 'metadata.name',
      rule: 'required',
      code: 'FieldValueRequired',
      message: `${at(l)}: ${kind} "${objectName(v)}": metadata.name: Required value: name or generateName is required (rule: required)`,
    });
    return;
  }
  const bad = quantityIssues(v as KubeObject);
  if (bad.length > 0) {
    for (const q of bad) {
      const l = s.lineOf([...prefix, ...q.path]);
      s.result.errors.push({
        ...locationIn(s, item, l),
        kind,
        name: objectName(v),
        fieldPath: q.fieldPath,
        rule: 'quantity',
        code: 'FieldValueInvalid',
        message: `${at(l)}: ${kind} "${objectName(v)}": ${q.message} (rule: quantity)`,
      });
    }
    return;
  }
  s.result.objects.push({ ...locationIn(s, item, s.lineOf(prefix)), object: v as KubeObject });
}

/**
 * Parses a multi-document YAML (or JSON) text. `file` is only used in locations and messages.
 * Never throws: every problem is a {@link LoadError}.
 */
export function parseManifests(text: string, file: string, opts: LoadOptions = {}): LoadResult {
  const result: LoadResult = { objects: [], errors: [], unknownKinds: {} };
  const lineCounter = new LineCounter();
  let docs: Document.Parsed[];
  try {
    docs = Array.from(parseAllDocuments(text, { lineCounter }));
  } catch (e) {
    result.errors.push({
      file,
      index: 0,
      rule: 'yaml',
      message: `${file}: cannot parse YAML: ${(e as Error).message}`,
    });
    return result;
  }
  const lineAt = (offset: number | undefined): number | undefined =>
    offset === undefined ? undefined : lineCounter.linePos(offset).line;
  docs.forEach((doc, index) => {
    loadDocument(doc, index, file, lineAt, result, opts);
  });
  if (
    result.objects.length === 0 &&
    result.errors.length === 0 &&
    Object.keys(result.unknownKinds).length === 0
  )
    result.notices = [
      `${file}: no Kubernetes objects (the file or stream is empty or holds only empty documents)`,
    ];
  return result;
}

const MANIFEST_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

/** Lists manifest files under a folder, recursively, sorted by path; hidden entries are skipped. */
async function listManifestFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true });
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listManifestFiles(p)));
    else if (e.isFile() && MANIFEST_EXTENSIONS.has(extname(e.name).toLowerCase())) out.push(p);
  }
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

async function readStream(s: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(typeof c === 'string' ? Buffer.from(c) : Buffer.from(c as Uint8Array));
  return Buffer.concat(chunks).toString('utf8');
}

function merge(into: LoadResult, r: LoadResult): void {
  into.objects.push(...r.objects);
  into.errors.push(...r.errors);
  for (const [k, n] of Object.entries(r.unknownKinds)) into.unknownKinds[k] = (into.unknownKinds[k] ?? 0) + n;
  if (r.notices?.length) into.notices = [...(into.notices ?? []), ...r.notices];
}

/**
 * Loads manifests from paths, in order: a file (any extension), a folder (every `*.yaml`, `*.yml`,
 * `*.json` below it, recursively, sorted by path, hidden entries skipped) or `-` for `opts.stdin`
 * (default `process.stdin`; read once even if `-` repeats). Never rejects: a missing or unreadable path,
 * or a folder without manifests, is a {@link LoadError} with `index: -1`.
 */
export async function loadManifestPaths(
  paths: readonly string[],
  opts: LoadOptions = {},
): Promise<LoadResult> {
  const result: LoadResult = { objects: [], errors: [], unknownKinds: {} };
  let stdinRead = false;
  for (const path of paths) {
    if (path === '-') {
      if (stdinRead) continue;
      stdinRead = true;
      try {
        merge(result, parseManifests(await readStream(opts.stdin ?? process.stdin), '<stdin>', opts));
      } catch (e) {
        result.errors.push({
          file: '<stdin>',
          index: -1,
          message: `<stdin>: cannot read: ${(e as Error).message}`,
        });
      }
      continue;
    }
    let files: string[];
    try {
      const st = await stat(path);
      if (st.isDirectory()) {
        files = await listManifestFiles(path);
        if (files.length === 0) {
          result.errors.push({
            file: path,
            index: -1,
            message: `${path}: folder contains no .yaml, .yml or .json files`,
          });
          continue;
        }
      } else {
        files = [path];
      }
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'no such file or directory' : (e as Error).message;
      result.errors.push({ file: path, index: -1, message: `${path}: ${why}` });
      continue;
    }
    for (const f of files) {
      let text: string;
      try {
        text = await readFile(f, 'utf8');
      } catch (e) {
        result.errors.push({ file: f, index: -1, message: `${f}: cannot read: ${(e as Error).message}` });
        continue;
      }
      merge(result, parseManifests(text, f, opts));
    }
  }
  return result;
}
