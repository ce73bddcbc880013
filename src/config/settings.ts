/**
 * The settings registry: one table of everything capenter is configured with, each setting named as upstream
 * Karpenter names it (environment variable + flag, see kubernetes-sigs/karpenter `pkg/operator/options` and
 * aws/karpenter-provider-aws `pkg/operator/options`). A {@link Setting} carries its names, default,
 * description, what it accepts and its parser; {@link resolveSettings} reads flags and environment (flags win,
 * an empty variable counts as unset) and turns every invalid value into a {@link SettingError} naming the
 * setting, the value and what it accepts. The CLI adds one flag per setting ({@link addSettingFlags}) and the
 * docs table is generated from the same list ({@link settingsMarkdownTable}; `scripts/generate-docs.ts`).
 *
 * This module sits below every owner of settings (it imports only commander's types): the core declares
 * `CORE_SETTINGS` in `src/operator/options.ts`, each cloud provider its own `Setting[]` in its folder, exposed by its
 * `ProviderModule` (`src/cloudprovider/module.ts`); all share this shape, these parsers and {@link SettingError}.
 */
import type { Command } from 'commander';

/**
 * One setting. `key` names the field the parsed value is written to (in {@link OperatorOptions} for the core
 * settings; a provider reads its own keys from the resolved values).
 */
export interface Setting<K extends string = string, T = unknown> {
  /** Upstream environment variable, e.g. `BATCH_IDLE_DURATION`. */
  env: string;
  /** Upstream flag without the dashes, e.g. `batch-idle-duration`. */
  flag: string;
  /** Field of the resolved values (camelCase), e.g. `batchIdleSeconds`. */
  key: K;
  /** One sentence for `--help` and the docs table. */
  description: string;
  /** The value when neither flag nor variable is set. */
  default: T;
  /** The default as shown in help and docs (default: `String(default)`). */
  defaultText?: string;
  /** What values it accepts, e.g. `a duration ("1s", "100ms", "1m30s") or seconds` — shown in help, docs, errors. */
  accepts: string;
  /**
   * Parses the raw text. `warn` reports a one-line warning about an accepted value (e.g. one that has no effect in
   * capenter); the registry prefixes it with the flag or variable. @throws Error (any message; the registry adds the
   * setting's name and `accepts`).
   */
  parse: (text: string, warn: (message: string) => void) => T;
  /** A Go-style boolean flag: `--flag` alone means `true`, `--flag=false` is accepted too. */
  boolean?: boolean;
  /** Who owns it, for the docs table: `core` (default), `aws`, `capi`, ... */
  group?: string;
}

/** The resolved values of a list of settings, keyed by `key`. */
export type SettingValues<L extends readonly Setting[]> = {
  [S in L[number] as S['key']]: S extends Setting<string, infer T> ? T : never;
};

/** Declares a setting with its key and value types inferred (an identity function). */
export function defineSetting<K extends string, T>(s: Setting<K, T>): Setting<K, T> {
  return s;
}

/** An invalid setting value: names the setting (flag or variable, as the user wrote it) and what it accepts. */
export class SettingError extends Error {
  readonly code = 'InvalidSetting';
  constructor(
    /** The environment variable of the setting. */
    readonly setting: string,
    /** Where the value came from: `--flag` or the variable name. */
    readonly source: string,
    /** The raw value. */
    readonly value: string,
    reason: string,
    accepts: string,
  ) {
    super(`${source}: "${value}" is not valid (${reason}); ${setting} accepts ${accepts}`);
    this.name = 'SettingError';
  }
}

/** Raw inputs of {@link resolveSettings}: commander's parsed flags (camelCase keys) and the environment. */
export interface SettingSources {
  /** Flag values by camelCase flag name (`batchIdleDuration`); `true` for a bare boolean flag. */
  flags?: Readonly<Record<string, unknown>>;
  env?: Readonly<Record<string, string | undefined>>;
  /** Receives one-line warnings about accepted values (`BATCH_X: ...`); default: dropped. */
  warn?: (message: string) => void;
}

/** `batch-idle-duration` → `batchIdleDuration` (commander's attribute name). */
export function flagAttribute(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Resolves every setting of `list`: the flag when given, else the environment variable when non-empty, else
 * `defaults[key]` when given (e.g. the embedded mode's random ports), else the setting's default. Returns the
 * values keyed by `key`.
 * @throws SettingError for the first invalid value (flags are checked before variables).
 */
export function resolveSettings<L extends readonly Setting[]>(
  list: L,
  src: SettingSources,
  defaults: Readonly<Record<string, unknown>> = {},
): SettingValues<L> {
  const out: Record<string, unknown> = {};
  for (const s of list) {
    const flagValue = src.flags?.[flagAttribute(s.flag)];
    const envValue = src.env?.[s.env];
    let raw: string | undefined;
    let source = '';
    if (flagValue !== undefined && flagValue !== false) {
      raw = flagValue === true ? 'true' : String(flagValue);
      source = `--${s.flag}`;
    } else if (envValue !== undefined && envValue !== '') {
      raw = envValue;
      source = s.env;
    }
    if (raw === undefined) {
      out[s.key] = cloneDefault(s.key in defaults ? defaults[s.key] : s.default);
      continue;
    }
    try {
      const [from, value] = [source, raw];
      out[s.key] = s.parse(raw, (m) => src.warn?.(`${from}=${value}: ${m}`));
    } catch (err) {
      throw new SettingError(s.env, source, raw, (err as Error).message, s.accepts);
    }
  }
  return out as SettingValues<L>;
}

function cloneDefault<T>(v: T): T {
  return v !== null && typeof v === 'object' ? (structuredClone(v) as T) : v;
}

/**
 * Checks a list for duplicate env names, flags or keys (two owners of one name would silently shadow each other).
 * @throws Error naming the duplicate.
 */
export function checkSettingList(list: readonly Setting[]): void {
  for (const field of ['env', 'flag', 'key'] as const) {
    const seen = new Set<string>();
    for (const s of list) {
      if (seen.has(s[field])) throw new Error(`settings: ${field} "${s[field]}" is declared twice`);
      seen.add(s[field]);
    }
  }
}

/**
 * Levenshtein edit distance: the fewest single-character insertions, deletions and substitutions that turn `a`
 * into `b` (case-sensitive; O(|a|·|b|) time, O(|b|) memory). `editDistance('kitten', 'sitting')` is 3.
 */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
    }
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * The entry of `known` closest to `name` by {@link editDistance}, compared case-insensitively, when it is at most
 * `max` edits away (default: 2, or a quarter of the name's length when longer); `undefined` when none is that close.
 * Ties go to the first in `known`.
 */
export function closestName(
  name: string,
  known: readonly string[],
  max = Math.max(2, Math.floor(name.length / 4)),
): string | undefined {
  let best: string | undefined;
  let bestDistance = max + 1;
  for (const k of known) {
    const d = editDistance(name.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

/**
 * Refuses environment variables that look like a misspelled setting of `list`: a variable that is not a setting's
 * name but is at most 2 edits (case-insensitive) from one, e.g. `BATCH_IDLE_DURATON` or `log_level`. Unrelated
 * variables (`PATH`, `KUBERNETES_SERVICE_HOST`) are far from every name and pass.
 * @throws Error `unknown setting BATCH_IDLE_DURATON (environment variable); did you mean BATCH_IDLE_DURATION?`
 */
export function checkMisspelledEnv(
  list: readonly Setting[],
  env: Readonly<Record<string, string | undefined>>,
): void {
  const known = list.map((s) => s.env);
  const names = new Set(known);
  for (const name of Object.keys(env).sort()) {
    if (names.has(name) || name.length < 6) continue;
    const near = closestName(name, known, 2);
    if (near !== undefined)
      throw new Error(`unknown setting ${name} (environment variable); did you mean ${near}?`);
  }
}

/** The help text of a setting's flag: description, variable, default. */
export function settingHelp(s: Setting): string {
  return `${s.description} (env ${s.env}; default ${defaultText(s)})`;
}

/** The default of `s` as shown to users. */
export function defaultText(s: Setting): string {
  if (s.defaultText !== undefined) return s.defaultText;
  const d = s.default;
  if (d === '' || d === undefined) return '""';
  return typeof d === 'object' ? JSON.stringify(d) : String(d);
}

/**
 * Adds one flag per setting to `cmd` (`--batch-idle-duration <value>`; boolean settings `--flag [bool]`), with
 * no commander default so an unset flag falls through to the environment in {@link resolveSettings}.
 */
export function addSettingFlags(cmd: Command, list: readonly Setting[]): Command {
  for (const s of list) {
    if (s.boolean) cmd.option(`--${s.flag} [bool]`, settingHelp(s));
    else cmd.option(`--${s.flag} <value>`, settingHelp(s));
  }
  return cmd;
}

/** Escapes a table cell (pipes and newlines) for Markdown. */
function cell(t: string): string {
  return t.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** The Markdown table of `list`: environment variable, flag, default, accepts, description, owner. */
export function settingsMarkdownTable(list: readonly Setting[]): string {
  const rows = [
    '| env | flag | default | accepts | description | owner |',
    '|---|---|---|---|---|---|',
    ...list.map(
      (s) =>
        `| \`${s.env}\` | \`--${s.flag}\` | \`${cell(defaultText(s))}\` | ${cell(s.accepts)} | ${cell(s.description)} | ${s.group ?? 'core'} |`,
    ),
  ];
  return `${rows.join('\n')}\n`;
}

// ---------------------------------------------------------------- parsers (throw a reason; the registry names the setting)

/** Go-style duration or plain seconds (`1s`, `100ms`, `1m30s`, `2.5`) → seconds. @throws Error. */
export function parseDuration(text: string): number {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let total = 0;
  let consumed = 0;
  for (const m of t.matchAll(re)) {
    const v = Number(m[1]);
    total += m[2] === 'ms' ? v / 1000 : m[2] === 's' ? v : m[2] === 'm' ? v * 60 : v * 3600;
    consumed += m[0].length;
  }
  if (consumed === 0 || consumed !== t.length) throw new Error('not a duration');
  return total;
}

/** TCP port 0–65535. @throws Error. */
export function parsePortNumber(text: string): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isInteger(n) || n < 0 || n > 65535) throw new Error('not a port');
  return n;
}

/** `true`/`false` (also `1`/`0`, any case). @throws Error. */
export function parseBoolean(text: string): boolean {
  const t = text.trim().toLowerCase();
  if (t === 'true' || t === '1') return true;
  if (t === 'false' || t === '0') return false;
  throw new Error('not a boolean');
}

/**
 * A boolean in the words the aws provider's settings accept (`true`/`1`/`t`/`yes`, `false`/`0`/`f`/`no`, any case;
 * wider than {@link parseBoolean}, kept as the aws provider has always read them). @throws Error.
 */
export function parseBooleanWord(text: string): boolean {
  const t = text.trim().toLowerCase();
  if (['true', '1', 't', 'yes'].includes(t)) return true;
  if (['false', '0', 'f', 'no'].includes(t)) return false;
  throw new Error('not a boolean');
}

/** A Go-style duration or plain seconds ({@link parseDuration}) that is more than 0 → seconds. @throws Error. */
export function parsePositiveDuration(text: string): number {
  const total = parseDuration(text);
  if (total <= 0) throw new Error('must be positive');
  return total;
}

/** A positive number (`> 0`). @throws Error. */
export function parsePositiveNumber(text: string): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(n) || n <= 0) throw new Error('not a positive number');
  return n;
}

/** A positive integer. @throws Error. */
export function parsePositiveInteger(text: string): number {
  const n = parsePositiveNumber(text);
  if (!Number.isInteger(n)) throw new Error('not an integer');
  return n;
}

/** A parser accepting one of `values` (case-insensitive), returning the canonical spelling. */
export function oneOf<T extends string>(values: readonly T[]): (text: string) => T {
  return (text) => {
    const hit = values.find((v) => v.toLowerCase() === text.trim().toLowerCase());
    if (hit === undefined) throw new Error(`not one of ${values.join(', ')}`);
    return hit;
  };
}

/**
 * The parser of an upstream setting capenter accepts but does not act on (it is only about upstream's internals):
 * `parse` checks the value as upstream would; a value other than `quiet` (upstream's default, which is what capenter
 * does anyway; `undefined`: every value) warns `has no effect in capenter (why)`.
 */
export function noEffect<T>(
  parse: (text: string) => T,
  quiet: T | undefined,
  why: string,
): (text: string, warn: (message: string) => void) => T {
  return (text, warn) => {
    const v = parse(text);
    if (quiet === undefined || v !== quiet) warn(`has no effect in capenter (${why})`);
    return v;
  };
}

/**
 * The parser of an upstream setting capenter does not implement: `parse` checks the value; only `only` (upstream's
 * default, which is what capenter does) is accepted. @throws Error `not implemented in capenter (why)` otherwise.
 */
export function onlyDefault<T>(parse: (text: string) => T, only: T, why: string): (text: string) => T {
  return (text) => {
    const v = parse(text);
    if (v !== only) throw new Error(`not implemented in capenter (${why})`);
    return v;
  };
}

/** An integer, negative allowed (e.g. upstream's `MEMORY_LIMIT=-1`). @throws Error. */
export function parseInteger(text: string): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isInteger(n)) throw new Error('not an integer');
  return n;
}

/** A non-empty string (trimmed). @throws Error. */
export function parseNonEmpty(text: string): string {
  const t = text.trim();
  if (t === '') throw new Error('empty');
  return t;
}
