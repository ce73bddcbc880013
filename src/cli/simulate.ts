/**
 * `capenter simulate -f PATH... [--region R] [-o table|json] [--explain] [--disruption] [--min-values-policy P] [--feature-gates G]`: reads manifests
 * (files, folders, `-` for stdin; `-f` repeatable), simulates what Karpenter would provision for the pending pods,
 * prints the plan; `--disruption` adds the first disruption pass (`simulate/disruption.ts`). Exit codes: 0 success; 2 invalid input (errors on stderr; the plan for the valid objects is still
 * printed); 1 unexpected failure. See docs/simulate.md.
 */
import type { Command } from 'commander';
import type { loadManifestPaths } from '../apis/load.ts';
import { DEFAULT_REGION, SUPPORTED_REGIONS } from '../cloudprovider/aws/catalog/index.ts';
import { parseFeatureGates } from '../operator/options.ts';
import { disruptionJSON, formatDisruptionTable, simulateDisruption } from '../simulate/disruption.ts';
import type { SimulationIssue, SourcedObject } from '../simulate/input.ts';
import { formatIssue, formatTable, toJSON } from '../simulate/output.ts';
import { type SimulateOptions, simulate } from '../simulate/run.ts';

/** Options of {@link runSimulate} (the parsed command line). */
export interface SimulateCommandOptions {
  /** Paths: files, folders (recursively, `*.yaml`/`*.yml`/`*.json`), or `-` for stdin. */
  filenames: string[];
  /** AWS region; default us-east-1. */
  region?: string;
  /** `table` (default) or `json`. */
  output?: string;
  explain?: boolean;
  /** Also compute the first disruption pass (`--disruption`): commands and why other nodes stay. */
  disruption?: boolean;
  /** Time of the disruption pass, RFC 3339 (`--now`); default the wall clock. Makes expiration reproducible. */
  now?: string;
  /** `--min-values-policy`: `Strict` (default) or `BestEffort` (upstream `MIN_VALUES_POLICY`). */
  minValuesPolicy?: string;
  /**
   * `--feature-gates`, as the controller's `FEATURE_GATES` (`NodeOverlay=true,...`); only `NodeOverlay`
   * changes the simulation (apply the input's NodeOverlays). Unknown or malformed gates exit 2.
   */
  featureGates?: string;
}

/** Where the command writes and reads; injected so tests run it in-process. */
export interface CommandIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Reads all of stdin (for `-f -`). */
  stdin?: () => Promise<string>;
  /** Catalog override for tests (defaults to the embedded AWS catalog). */
  catalog?: SimulateOptions['catalog'];
}

/** Exit code of a successful run. */
export const EXIT_OK = 0;
/** Exit code of an unexpected failure. */
export const EXIT_FAILURE = 1;
/** Exit code when any input was invalid (the valid part is still simulated and printed). */
export const EXIT_INVALID_INPUT = 2;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Runs `capenter simulate` and returns its exit code (0, 1 or 2). Never throws: unexpected errors are
 * printed to stderr with exit code 1.
 */
export async function runSimulate(opts: SimulateCommandOptions, io: CommandIO): Promise<number> {
  try {
    const output = opts.output ?? 'table';
    if (output !== 'table' && output !== 'json') {
      io.stderr(`error: --output must be "table" or "json", got "${output}"\n`);
      return EXIT_INVALID_INPUT;
    }
    const region = opts.region ?? DEFAULT_REGION;
    if (!(SUPPORTED_REGIONS as readonly string[]).includes(region)) {
      io.stderr(
        `error: --region "${region}" is not in the embedded catalog; use one of: ${SUPPORTED_REGIONS.join(', ')}\n`,
      );
      return EXIT_INVALID_INPUT;
    }
    const minValuesPolicy = opts.minValuesPolicy ?? 'Strict';
    if (minValuesPolicy !== 'Strict' && minValuesPolicy !== 'BestEffort') {
      io.stderr(`error: --min-values-policy must be "Strict" or "BestEffort", got "${minValuesPolicy}"\n`);
      return EXIT_INVALID_INPUT;
    }
    if (opts.filenames.length === 0) {
      io.stderr('error: no input: pass manifests with -f PATH (a file, a folder, or - for stdin)\n');
      return EXIT_INVALID_INPUT;
    }

    const objects: SourcedObject[] = [];
    const errors: SimulationIssue[] = [];
    const unknownKinds: Record<string, number> = {};
    let stdinUsed = false;
    const { loadManifestPaths, parseManifests } = await import('../apis/load.ts');
    for (const path of opts.filenames) {
      let res: Awaited<ReturnType<typeof loadManifestPaths>>;
      try {
        if (path === '-') {
          if (stdinUsed) continue;
          stdinUsed = true;
          res = parseManifests(await (io.stdin ?? readStdin)(), '<stdin>');
        } else {
          res = await loadManifestPaths([path]);
        }
      } catch (e) {
        errors.push({ file: path, message: (e as Error).message });
        continue;
      }
      objects.push(...res.objects);
      errors.push(...res.errors);
      for (const n of res.notices ?? []) io.stderr(`notice: ${n}\n`);
      for (const [k, n] of Object.entries(res.unknownKinds)) unknownKinds[k] = (unknownKinds[k] ?? 0) + n;
    }

    let now: number | undefined;
    if (opts.now !== undefined) {
      now = Date.parse(opts.now);
      if (Number.isNaN(now)) {
        io.stderr(`error: --now must be an RFC 3339 time such as 2026-11-29T16:51:30Z, got "${opts.now}"\n`);
        return EXIT_INVALID_INPUT;
      }
    }

    let gates: Record<string, boolean>;
    try {
      gates = parseFeatureGates(opts.featureGates ?? '');
    } catch (e) {
      io.stderr(`error: --feature-gates: ${(e as Error).message}\n`);
      return EXIT_INVALID_INPUT;
    }
    const result = await simulate(
      { objects, errors, unknownKinds },
      {
        region,
        explain: opts.explain ?? false,
        minValuesPolicy,
        nodeOverlay: gates.NodeOverlay ?? false,
        ...(io.catalog ? { catalog: io.catalog } : {}),
      },
    );
    for (const e of result.errors) io.stderr(`${formatIssue(e)}\n`);
    // The disruption pass reads the same objects; its input problems are the ones printed above.
    const disruption = opts.disruption
      ? await simulateDisruption(
          { objects },
          {
            region,
            nodeOverlay: gates.NodeOverlay ?? false,
            ...(now !== undefined ? { now } : {}),
            ...(io.catalog ? { catalog: io.catalog } : {}),
            ...(minValuesPolicy === 'BestEffort' ? { options: { minValuesPolicy } } : {}),
          },
        )
      : undefined;
    if (output === 'json') {
      const doc = toJSON(result, { explain: opts.explain ?? false });
      const full = disruption ? { ...doc, disruption: disruptionJSON(disruption) } : doc;
      io.stdout(`${JSON.stringify(full, null, 2)}\n`);
    } else {
      io.stdout(formatTable(result, { explain: opts.explain ?? false }));
      if (disruption) io.stdout(`\n${formatDisruptionTable(disruption)}`);
    }
    return result.errors.length > 0 ? EXIT_INVALID_INPUT : EXIT_OK;
  } catch (e) {
    io.stderr(`error: simulation failed unexpectedly: ${(e as Error).stack ?? String(e)}\n`);
    return EXIT_FAILURE;
  }
}

/** Registers `capenter simulate` on the program. */
export function registerSimulateCommand(program: Command): void {
  program
    .command('simulate')
    .description(
      'simulate what Karpenter would provision for the pending pods in the given manifests (no cluster needed)',
    )
    .requiredOption(
      '-f, --filename <paths...>',
      'manifest files or folders (repeatable; - reads stdin)',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option('--region <region>', 'AWS region of the catalog (types, zones, prices)', DEFAULT_REGION)
    .option('-o, --output <format>', 'output format: table or json', 'table')
    .option('--explain', 'explain every pod placement', false)
    .option(
      '--disruption',
      'also compute the first disruption pass (consolidation, drift, expiration)',
      false,
    )
    .option(
      '--min-values-policy <policy>',
      'what a NodeClaim that cannot meet minValues gets: Strict (default) is not planned, BestEffort has minValues lowered (MIN_VALUES_POLICY)',
      'Strict',
    )
    .option(
      '--feature-gates <gates>',
      "feature gates as the controller's FEATURE_GATES, e.g. NodeOverlay=true (applies the input's NodeOverlays)",
    )
    .option(
      '--now <time>',
      'time of the disruption pass (RFC 3339), for reproducible expiration; default now',
    )
    .action(
      async (o: {
        filename: string[];
        region: string;
        output: string;
        explain: boolean;
        disruption: boolean;
        now?: string;
        minValuesPolicy: string;
        featureGates?: string;
      }) => {
        process.exitCode = await runSimulate(
          {
            filenames: o.filename,
            region: o.region,
            output: o.output,
            explain: o.explain,
            disruption: o.disruption,
            minValuesPolicy: o.minValuesPolicy,
            ...(o.now !== undefined ? { now: o.now } : {}),
            ...(o.featureGates !== undefined ? { featureGates: o.featureGates } : {}),
          },
          {
            stdout: (t) => process.stdout.write(t),
            stderr: (t) => process.stderr.write(t),
          },
        );
      },
    );
}
