/**
 * Test harness for moto, the AWS API emulator (PyPI `moto[server]==5.2.3`, installed by `scripts/install-moto.sh`
 * into a virtualenv under ~/.cache). One moto_server per test file, on a free 127.0.0.1 port (moto binds port 0
 * and prints the port it got); `reset()` between tests (`POST /moto-api/reset`), `stop()` in `afterAll`.
 *
 * ```ts
 * let moto: MotoServer;
 * beforeAll(async () => { moto = await startMoto(); });
 * afterEach(() => moto.reset());
 * afterAll(() => moto.stop());
 * const ec2 = new EC2Client(moto.clientConfig);
 * ```
 *
 * Library code never reads `process.env`: the endpoint, region and dummy credentials are handed to the SDK clients
 * through {@link MotoServer.clientConfig} (or to a child process through {@link MotoServer.env}, the SDK's standard
 * `AWS_ENDPOINT_URL` variables).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The moto version the harness expects (pinned in `scripts/install-moto.sh`). */
export const MOTO_VERSION = '5.2.3';

/** Region the tests use unless told otherwise. */
export const MOTO_REGION = 'us-west-2';

/** SDK v3 client configuration that talks to an emulator (any `@aws-sdk/client-*` constructor accepts it). */
export interface AwsTestClientConfig {
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Keep retries short: the emulator is local. */
  maxAttempts: number;
}

/** A running moto_server. */
export interface MotoServer {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  readonly port: number;
  readonly region: string;
  /** For SDK clients in this process. */
  readonly clientConfig: AwsTestClientConfig;
  /** For a child process (`capenter start --cloud-provider aws`): `AWS_ENDPOINT_URL`, region, dummy credentials. */
  readonly env: Record<string, string>;
  /** Drops every resource in every moto backend (`POST /moto-api/reset`). */
  reset(): Promise<void>;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s); resolves when the process exited. */
  stop(): Promise<void>;
}

/** Options of {@link startMoto}. */
export interface StartMotoOptions {
  /** Default {@link MOTO_REGION}. */
  region?: string;
  /** Seconds to wait for the server to print its port, default 60 (a cold Python import can be slow on 2 shared cores). */
  startTimeoutSeconds?: number;
  /** Extra environment for moto_server (e.g. `MOTO_IAM_LOAD_MANAGED_POLICIES: 'true'` for AWS-managed policy ARNs). */
  env?: Record<string, string>;
}

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

let binary: string | undefined;

/**
 * Path of the moto_server binary; runs `scripts/install-moto.sh` (a no-op once installed, ~1 min the first time).
 * @throws Error with the installer's output when installing fails (no Python 3, no network to PyPI).
 */
export function motoBinary(): string {
  if (binary) return binary;
  try {
    binary = execFileSync('bash', [`${repoRoot}scripts/install-moto.sh`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(
      `could not install moto[server]==${MOTO_VERSION} (scripts/install-moto.sh): ${e.stderr || e.message}`,
    );
  }
  return binary;
}

/** The config/env pair for an emulator at `endpoint`. */
export function emulatorConfig(
  endpoint: string,
  region = MOTO_REGION,
): { clientConfig: AwsTestClientConfig; env: Record<string, string> } {
  return {
    clientConfig: {
      endpoint,
      region,
      credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
      maxAttempts: 2,
    },
    env: {
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: region,
      AWS_DEFAULT_REGION: region,
      AWS_ACCESS_KEY_ID: 'testing',
      AWS_SECRET_ACCESS_KEY: 'testing',
    },
  };
}

/**
 * Starts moto_server on `127.0.0.1`, port chosen by the OS, and waits until it answers.
 * @throws Error (with the server's output) when it exits or does not come up within the timeout.
 */
export async function startMoto(opts: StartMotoOptions = {}): Promise<MotoServer> {
  const region = opts.region ?? MOTO_REGION;
  const bin = motoBinary();
  const child: ChildProcess = spawn(bin, ['-H', '127.0.0.1', '-p', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      // moto's own defaults; no real credentials ever reach it.
      AWS_ACCESS_KEY_ID: 'testing',
      AWS_SECRET_ACCESS_KEY: 'testing',
      AWS_DEFAULT_REGION: region,
      PYTHONUNBUFFERED: '1',
      ...(opts.env ?? {}),
    },
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => {
        child.kill('SIGKILL');
        reject(new Error(`moto_server did not start within ${opts.startTimeoutSeconds ?? 60}s:\n${output}`));
      },
      (opts.startTimeoutSeconds ?? 60) * 1000,
    );
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const m = /Running on http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`moto_server exited with code ${code} before listening:\n${output}`));
    });
  });
  // Drain the pipes so a chatty server never blocks on a full pipe.
  child.stdout?.removeAllListeners('data');
  child.stderr?.removeAllListeners('data');
  child.stdout?.resume();
  child.stderr?.resume();
  const endpoint = `http://127.0.0.1:${port}`;
  // The port is printed just before serving; the first request proves it answers.
  for (let i = 0; ; i++) {
    try {
      const res = await fetch(`${endpoint}/moto-api/reset`, { method: 'POST' });
      if (res.ok) break;
    } catch (err) {
      if (i >= 50) throw new Error(`moto_server at ${endpoint} does not answer: ${(err as Error).message}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const { clientConfig, env } = emulatorConfig(endpoint, region);
  return {
    endpoint,
    port,
    region,
    clientConfig,
    env,
    async reset(): Promise<void> {
      const res = await fetch(`${endpoint}/moto-api/reset`, { method: 'POST' });
      if (!res.ok) throw new Error(`moto reset failed: HTTP ${res.status} ${await res.text()}`);
    },
    async stop(): Promise<void> {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** moto behind the fault-injecting proxy (`src/sim/aws/proxy.ts`): what the aws provider's tests talk to. */
export interface AwsEmulator {
  moto: MotoServer;
  proxy: import('../../src/sim/aws/proxy.ts').AwsEmulatorProxy;
  /** The proxy's endpoint. */
  readonly endpoint: string;
  readonly region: string;
  /** SDK client config pointing at the proxy. */
  readonly clientConfig: AwsTestClientConfig;
  /** Env for a child process pointing at the proxy. */
  readonly env: Record<string, string>;
  /** Resets moto and the proxy's faults, counters and caches. */
  reset(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts moto and the proxy in front of it (one pair per test file). */
export async function startAwsEmulator(opts: StartMotoOptions = {}): Promise<AwsEmulator> {
  const { AwsEmulatorProxy } = await import('../../src/sim/aws/proxy.ts');
  const moto = await startMoto(opts);
  const { catalogPriceTable } = await import('../../src/embedded/rules.ts');
  const proxy = await AwsEmulatorProxy.start({ upstream: moto.endpoint, prices: catalogPriceTable });
  const { clientConfig, env } = emulatorConfig(proxy.endpoint, moto.region);
  return {
    moto,
    proxy,
    endpoint: proxy.endpoint,
    region: moto.region,
    clientConfig,
    env,
    reset: () => proxy.reset(),
    async stop(): Promise<void> {
      await proxy.stop();
      await moto.stop();
    },
  };
}
