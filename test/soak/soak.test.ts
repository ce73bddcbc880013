/**
 * The soak harness (issue 16): the fault schedule is a pure function of the seed, the fault proxy injects
 * what it is armed with (and only on the requests it applies to), two short seeded soak runs on the kwok
 * provider and one on the aws provider (moto) keep every invariant. The CI-sized soak runs from `.ci/run` (`npm run soak`).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedCluster } from '../../src/sim/apiserver/index.ts';
import { type AwsEmulator, startAwsEmulator } from '../aws/moto.ts';
import { BAD_FAMILIES, badCases, runBadInputs } from './badinput.ts';
import { FAULT_KINDS, faultSchedule, formatSchedule, parseSchedule } from './faults.ts';
import { type FaultProxy, startFaultProxy } from './proxy.ts';
import { compactLogLine, runSoak } from './run.ts';

describe('fault schedule', () => {
  it('is determined by the seed, spares the last 15% of the steps, and round-trips through its replay form', () => {
    const a = faultSchedule(42, 200);
    expect(faultSchedule(42, 200)).toEqual(a);
    expect(faultSchedule(43, 200)).not.toEqual(a);
    expect(a.length).toBeGreaterThan(40);
    expect(Math.max(...a.map((e) => e.step))).toBeLessThan(170);
    expect(parseSchedule(formatSchedule(a))).toEqual(a);
    expect(() => parseSchedule('3:teapot:1')).toThrow(/bad entry "3:teapot:1".*conflict409\|/);
  });
});

describe('violation log lines', () => {
  it('a pino line becomes fake seconds since the run began, the message, then its fields; warnings are marked', () => {
    const line = JSON.stringify({
      level: 30,
      time: 15_400,
      pid: 7,
      hostname: 'h',
      controller: 'provisioner',
      nodeclaim: 'soak-p0-4n5fd',
      requests: { cpu: '500m' },
      msg: 'created nodeclaim',
    });
    expect(compactLogLine(line, 5_000)).toBe(
      't=10 created nodeclaim controller=provisioner nodeclaim=soak-p0-4n5fd requests={"cpu":"500m"}',
    );
    expect(compactLogLine(JSON.stringify({ level: 40, time: 5_000, msg: 'launch failed' }), 5_000)).toBe(
      't=0 WARN launch failed',
    );
    expect(compactLogLine('not json\n', 0)).toBe('not json');
  });
});

describe('fault proxy', () => {
  let stop: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const s of stop.reverse()) await s();
    stop = [];
  });

  it('answers armed 409 on mutations only, 503 once, and 410 Gone as a watch ERROR event; counts each', async () => {
    const server = await startEmbeddedCluster({ tls: false, token: 'soak-proxy-test' });
    stop.push(() => server.stop());
    const proxy: FaultProxy = await startFaultProxy({ upstream: server.url });
    stop.push(() => proxy.stop());
    const auth = { authorization: 'Bearer soak-proxy-test' };
    const cm = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'x', namespace: 'default' },
      data: { a: '1' },
    };
    const base = `${proxy.url}/api/v1/namespaces/default/configmaps`;
    expect(
      (
        await fetch(base, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify(cm),
        })
      ).status,
    ).toBe(201);

    proxy.arm('conflict409', 1);
    expect((await fetch(`${base}/x`, { headers: auth })).status).toBe(200); // a GET is not a mutation
    const patch = () =>
      fetch(`${base}/x`, {
        method: 'PATCH',
        headers: { ...auth, 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ data: { a: '2' } }),
      });
    const conflict = await patch();
    expect(conflict.status).toBe(409);
    expect(((await conflict.json()) as { reason: string }).reason).toBe('Conflict');
    expect((await patch()).status).toBe(200);

    proxy.arm('error503', 1);
    expect((await fetch(`${base}/x`, { headers: auth })).status).toBe(503);
    expect((await fetch(`${base}/x`, { headers: auth })).status).toBe(200);

    proxy.arm('gone410', 1);
    const watch = await fetch(`${base}?watch=true&resourceVersion=1`, { headers: auth });
    const ev = JSON.parse((await watch.text()).trim()) as { type: string; object: { code: number } };
    expect(ev).toMatchObject({ type: 'ERROR', object: { code: 410 } });

    expect(proxy.injected).toEqual({
      conflict409: 1,
      error500: 0,
      error503: 1,
      slow: 0,
      watchClose: 0,
      gone410: 1,
    });
  });
});

describe('soak runs (kwok)', () => {
  it('two short seeded runs inject faults and keep every invariant; every pod runs once faults stop', async () => {
    for (const seed of [3, 11]) {
      const r = await runSoak({ seed, steps: 30 });
      expect(
        r.violations,
        `seed ${seed}: replay with npm run soak -- --runs 1 --seed ${seed} --steps 30`,
      ).toEqual([]);
      expect(r.settleSeconds).toBeDefined();
      expect(FAULT_KINDS.reduce((n, k) => n + r.injected[k], 0)).toBeGreaterThan(5);
      expect(r.maxNodeClaims).toBeGreaterThan(0);
    }
    // the runs are on a fake clock, but every tick waits for real work (API writes, informers, the operator's
    // loops): the two runs took 34 s at load 10 on 2 cores and over 60 s at load 15-24. A bound for a hang,
    // not a timing assertion (a test may be slow, never flaky: issue 24)
  }, 600_000);
});

describe('soak run (aws, moto)', () => {
  let emu: AwsEmulator;
  beforeAll(async () => {
    emu = await startAwsEmulator();
  }, 120_000);
  afterAll(async () => {
    await emu?.stop();
  });

  it('a short seeded run launches through CreateFleet, injects capacity errors, a lost fleet reply and never-joining instances, and keeps every invariant', async () => {
    // the scenario of seed 49, an explicit fault schedule: the first launches meet capacity errors, a kubelet that
    // never joins and a lost fleet reply (launched twice: GC must terminate the instance no NodeClaim points at),
    // then API faults, a vanished instance and a restart
    const faults = parseSchedule(
      '0:ice:2,0:noRegister:1,1:lostLaunch:1,4:error500:3,6:conflict409:2,8:vanish:1,10:restart:1,12:watchClose:2,15:gone410:1',
    );
    const r = await runSoak({ seed: 49, steps: 30, faults, aws: emu });
    expect(
      r.violations,
      `replay with npm run soak -- --runs 1 --seed 49 --steps 30 --provider aws --faults '${formatSchedule(faults)}'`,
    ).toEqual([]);
    expect(r.settleSeconds).toBeDefined();
    expect(r.maxNodeClaims).toBeGreaterThan(0);
    expect(emu.proxy.calls.get('ec2:CreateFleet') ?? 0).toBeGreaterThan(0);
    expect(emu.proxy.calls.get('ec2:TerminateInstances') ?? 0).toBeGreaterThan(0);
    expect(r.injected.restart).toBe(1);
    expect(r.injected.vanish).toBeGreaterThan(0);
    expect(r.injected.ice, 'fleet overrides failed by the emulator proxy').toBeGreaterThan(0);
    expect(r.injected.noRegister, 'instances whose kubelet never joined').toBeGreaterThan(0);
    expect(r.injected.lostLaunch, 'fleet replies lost after the launch').toBe(1);
  }, 300_000);
});

/** Runs `npm run soak -- args` (tsx, as npm does); resolves with its exit code and stdout. */
function soakScript(args: string[]): Promise<{ code: number; out: string }> {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'scripts/soak.ts', ...args],
      { cwd: root, maxBuffer: 16 << 20 },
      (err, stdout) => resolve({ code: err ? Number(err.code ?? 1) : 0, out: stdout }),
    );
  });
}

describe('soak script: time budget and hang detection', () => {
  it('--minutes starts runs until the budget is spent (no --runs); --run-timeout fails a run that does not finish, says where it hung, kills its worker and goes on', async () => {
    const [timed, hung] = await Promise.all([
      soakScript(['--minutes', '0.05', '--steps', '3', '--parallel', '2', '--no-shrink']),
      soakScript(['--runs', '3', '--steps', '4000', '--parallel', '2', '--run-timeout', '6', '--no-shrink']),
    ]);
    // 3 s of budget, runs of 3 steps: at least one run per worker started, and the count is open-ended
    expect(timed.code, timed.out).toBe(0);
    expect(timed.out).toMatch(/^run 1\/- seed \d+: ok/m);
    expect(timed.out).toMatch(/soak \(kwok\): \d+ runs × 3 steps .* 0 failing runs/);
    // 4000-step runs cannot finish in 6 s (counted from when the worker has loaded): each is a timeout, a fresh worker
    // takes the next seed, exit 1
    expect(hung.code, hung.out).toBe(1);
    expect(
      hung.out.match(/\[timeout\] the run did not finish within 6 s \(real time\): a hang/g),
    ).toHaveLength(3);
    // a worker says where its run was (the step, what it awaited, the emulator's open requests) and prints its last
    // log lines (a run still setting up its cluster cannot: on a busy machine one of the three may be)
    expect(hung.out).toMatch(
      /a hang at step \d+ \(fake t=\d+ s\), awaiting: [a-z]+.*; emulator requests open: none\n +operator log \(the last lines[^\n]*\n( +t=\d+ [^\n]+\n)+/,
    );
    expect(hung.out).toContain('soak (kwok): 3 runs × 4000 steps');
    expect(hung.out).toContain('3 failing runs');
    expect(hung.out).toContain(
      'replay: npm run soak -- --runs 1 --seed 3 --steps 4000 --log-file /tmp/soak-3.log',
    );
  }, 240_000);
});

describe('bad input (issue 16 §2)', () => {
  it('one object of each family: the API server answers as a real one, simulate exits 2 naming it, the controller keeps reconciling', async () => {
    const cases = badCases(7, BAD_FAMILIES.length);
    expect(cases.map((c) => c.family)).toEqual(BAD_FAMILIES);
    const r = await runBadInputs(cases);
    expect(r.crashes).toEqual([]);
    expect(r.answers.filter((a) => a.mismatches.length > 0)).toEqual([]);
    expect(r.goodPodRan).toBe(true);
    // every family but the valid-yet-unsatisfiable NodePool is refused by both: 413 for the 10 MB body (as
    // kube-apiserver, 3 MiB limit), else a 422 naming the field
    const refused = r.answers.filter((a) => a.family !== 'nodepool-conflicting-requirements');
    expect(refused.map((a) => [a.family, a.status, a.simulateExit, a.simulateNamed])).toEqual(
      refused.map((a) => [a.family, a.family === 'nodepool-10mb-annotation' ? 413 : 422, 2, true]),
    );
    expect(r.answers.find((a) => a.family === 'pod-selector-syntax')?.message).toMatch(
      /labelSelector\.matchExpressions\[0\]\.operator: Invalid value: .*not a valid selector operator/,
    );
    expect(r.answers.find((a) => a.family === 'nodepool-10mb-annotation')?.message).toMatch(
      /Request entity too large: limit is 3145728/,
    );
    expect(r.answers.find((a) => a.family === 'nodepool-conflicting-requirements')).toMatchObject({
      status: 201,
      simulateExit: 0,
    });
  }, 60_000);
});
