/**
 * The scenario case format of `test/cases/` (vendored from `../shared/cases`; every `expect` key is explained in
 * `test/cases/README.md`), shared by the pure-core run (`test/cases.test.ts`) and the real control plane's run
 * (`test/cluster/cases.test.ts`): the case types, the reader and the bound checks both assert.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { parse as parseYaml } from 'yaml';

/** The vendored case directory. */
export const casesDir = join(dirname(fileURLToPath(import.meta.url)), 'cases');

/** Allowed and forbidden values (instance types, NodePools, zones). */
export interface Bounds {
  allIn?: string[];
  noneIn?: string[];
}

/** Expected allocatable of one instance type (quantities as in a manifest). */
export interface AllocatableExpect {
  type: string;
  cpu: string | number;
  memory: string | number;
  pods: string | number;
}

/** A case's `expect` block. */
export interface CaseExpect {
  unschedulablePods?: number;
  nodeClaims?: { min: number; max: number };
  everyNodeClaimFits?: boolean;
  instanceTypes?: Bounds;
  nodePools?: Bounds;
  zones?: { distinctAtLeast?: number; allIn?: string[] };
  maxPodsPerZoneSkew?: number;
  allocatable?: AllocatableExpect | AllocatableExpect[];
  disruption?: unknown;
  terminated?: unknown;
}

/** One case file. */
export interface Case {
  id: string;
  title: string;
  kind: 'provisioning' | 'consolidation' | 'drift' | 'termination' | 'catalog';
  region: string;
  input: string;
  expect: CaseExpect;
}

/** The `expect` keys of provisioning and catalog cases (a case naming another key fails in both runs). */
export const PROVISIONING_EXPECT_KEYS: ReadonlySet<string> = new Set([
  'unschedulablePods',
  'nodeClaims',
  'everyNodeClaimFits',
  'instanceTypes',
  'nodePools',
  'zones',
  'maxPodsPerZoneSkew',
  'allocatable',
]);

/** The `.yaml` file names of {@link casesDir}, sorted. */
export const caseFiles: string[] = readdirSync(casesDir)
  .filter((f) => f.endsWith('.yaml'))
  .sort();

/** Every case, in file-name order. */
export const cases: Case[] = caseFiles.map((f) => parseYaml(readFileSync(join(casesDir, f), 'utf8')) as Case);

/** Asserts that every value is in `bounds.allIn` (when given) and not in `bounds.noneIn`; `what` names the value. */
export function checkBounds(what: string, values: string[], bounds: Bounds): void {
  for (const v of values) {
    if (bounds.allIn)
      expect(bounds.allIn, `${what} "${v}" (all: ${values.join(', ')}) must be in allIn`).toContain(v);
    if (bounds.noneIn)
      expect(bounds.noneIn, `${what} "${v}" (all: ${values.join(', ')}) must not be in noneIn`).not.toContain(
        v,
      );
  }
}
