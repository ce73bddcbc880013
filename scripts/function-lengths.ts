/**
 * Measures the length in lines of every function under `src/` (issue 25: no function over 120 lines outside
 * generated code) with the TypeScript compiler API.
 *
 * Counted: function declarations, methods, accessors, constructors, and every arrow function or function
 * expression (assigned to a name, a property or a class field, passed as a callback, or anything else: a
 * returned or immediately invoked one is counted too, so nothing long hides behind an anonymous function).
 * A function's length is the number of lines from its first token (its docstring excluded) to its last,
 * nested functions included. Scanned: the `.ts` files under `src/`, except the tests (`*.test.ts`) and the
 * generated files in {@link GENERATED}.
 *
 * Usage: `npx tsx scripts/function-lengths.ts [--top N] [--max LINES]` (also `npm run lint:functions`).
 * Prints the N (default 20) longest as `lines  file:line  name`. With `--max`, prints instead every function
 * longer than LINES and exits 1 when there is one. `test/function-length.test.ts` enforces the limit.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The repository root (the parent of `scripts/`). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The limit of issue 25, in lines. */
export const MAX_FUNCTION_LINES = 120;

/**
 * Paths (relative to the repository root, `/`-separated; a trailing `/` names a folder) of generated code,
 * which is not scanned. Today the only generated files under `src/` are the AWS catalog data written by
 * `scripts/generate-catalog.ts` (JSON, plus `SOURCES.md`): no `.ts` file under `src/` is generated (the CRD
 * YAML that `scripts/generate-crds.ts` writes lives in `crds/` and `charts/`).
 */
export const GENERATED: readonly string[] = ['src/cloudprovider/aws/catalog/data/'];

/** One measured function. */
export interface FunctionLength {
  /** Path relative to the repository root, `/`-separated. */
  file: string;
  /** 1-based line of the function's first token. */
  line: number;
  /** Lines from the first token to the last, both included. */
  lines: number;
  /**
   * A readable name: `name` for a top-level function or variable, `Class.method` for a member,
   * `outer/inner` for a nested one, `outer/describe('title')` for a callback (the callee and its first
   * string argument), `outer/<anonymous>` when nothing names it.
   */
  name: string;
}

/** `true` for `*.ts` files under `src/` that are scanned: not a test, not generated. */
export function isScanned(file: string): boolean {
  return (
    file.startsWith('src/') &&
    file.endsWith('.ts') &&
    !file.endsWith('.test.ts') &&
    !GENERATED.some((g) => (g.endsWith('/') ? file.startsWith(g) : file === g))
  );
}

/** Every scanned file under `dir` (relative to `root`), sorted, `/`-separated. */
function sourceFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...sourceFiles(root, p));
    else if (isScanned(p)) out.push(p);
  }
  return out.sort();
}

/** The text of a property or binding name, or `undefined` for computed and destructuring names. */
function nameText(name: ts.Node | undefined, sf: ts.SourceFile): string | undefined {
  if (!name) return undefined;
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name)) return name.text;
  if (ts.isNumericLiteral(name)) return name.text;
  if (ts.isComputedPropertyName(name)) return `[${name.expression.getText(sf)}]`;
  return undefined;
}

/** `callee('first string argument')` or `callee(…)`, for naming a callback. */
function calleeLabel(call: ts.CallExpression | ts.NewExpression, sf: ts.SourceFile): string {
  const callee = call.expression.getText(sf).replace(/\s+/g, '');
  const prefix = ts.isNewExpression(call) ? 'new ' : '';
  const first = call.arguments?.[0];
  const title =
    first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first))
      ? `'${first.text.length > 40 ? `${first.text.slice(0, 40)}…` : first.text}'`
      : '…';
  return `${prefix}${callee}(${title})`;
}

/** The name of a function-like node, without its enclosing names. */
function ownName(node: ts.SignatureDeclaration, sf: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (ts.isGetAccessor(node)) return `get ${nameText(node.name, sf) ?? '?'}`;
  if (ts.isSetAccessor(node)) return `set ${nameText(node.name, sf) ?? '?'}`;
  const own = nameText(node.name, sf);
  if (own) return own;
  let p = node.parent;
  while (ts.isParenthesizedExpression(p) || ts.isAsExpression(p) || ts.isSatisfiesExpression(p)) p = p.parent;
  if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) {
    const n = nameText(p.name, sf);
    if (n) return n;
  }
  if (ts.isBinaryExpression(p) && p.operatorToken.kind === ts.SyntaxKind.EqualsToken)
    return p.left.getText(sf).replace(/\s+/g, '');
  if ((ts.isCallExpression(p) || ts.isNewExpression(p)) && p.expression !== node) return calleeLabel(p, sf);
  if (ts.isReturnStatement(p)) return '<returned>';
  return '<anonymous>';
}

/** Whether `node` is one of the function kinds that are measured. */
function isMeasured(node: ts.Node): node is ts.SignatureDeclaration & { body?: ts.Node } {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessor(node) ||
    ts.isSetAccessor(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node)
  );
}

/** Every function of one source text, in source order. */
export function measureSource(file: string, text: string): FunctionLength[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: FunctionLength[] = [];
  const visit = (node: ts.Node, scope: string): void => {
    let inner = scope;
    if (ts.isClassLike(node)) {
      inner = [scope, nameText(node.name, sf) ?? '<class>'].filter(Boolean).join('/');
    } else if (isMeasured(node) && node.body) {
      const own = ownName(node, sf);
      const isMember = ts.isClassLike(node.parent);
      const name = scope ? `${scope}${isMember ? '.' : '/'}${own}` : own;
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      out.push({ file, line: start + 1, lines: end - start + 1, name });
      inner = name;
    }
    ts.forEachChild(node, (c) => visit(c, inner));
  };
  visit(sf, '');
  return out;
}

/** Every function of every scanned file under `root/src`, longest first (ties: by file, then line). */
export function scanFunctionLengths(root: string = ROOT): FunctionLength[] {
  const all = sourceFiles(root, 'src').flatMap((f) => measureSource(f, readFileSync(join(root, f), 'utf8')));
  return all.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file) || a.line - b.line);
}

/** One report line: `lines  file:line  name`, the count right-aligned to 4 characters. */
export function formatFunctionLength(f: FunctionLength): string {
  return `${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}`;
}

/** Parses `--top N` and `--max LINES`; throws on anything else. */
function parseArgs(args: readonly string[]): { top: number; max: number | undefined } {
  let top = 20;
  let max: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const v = Number(args[i + 1]);
    if ((a === '--top' || a === '--max') && Number.isInteger(v) && v > 0) {
      if (a === '--top') top = v;
      else max = v;
      i++;
    } else throw new Error(`usage: function-lengths.ts [--top N] [--max LINES] (bad argument: ${a})`);
  }
  return { top, max };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let opts: { top: number; max: number | undefined };
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error((e as Error).message);
    process.exit(2);
  }
  const all = scanFunctionLengths();
  if (opts.max === undefined) {
    for (const f of all.slice(0, opts.top)) console.log(formatFunctionLength(f));
  } else {
    const limit = opts.max;
    const over = all.filter((f) => f.lines > limit);
    for (const f of over) console.log(formatFunctionLength(f));
    console.error(
      over.length === 0
        ? `no function over ${limit} lines under src/`
        : `${over.length} function(s) over ${limit} lines`,
    );
    process.exitCode = over.length === 0 ? 0 : 1;
  }
}
