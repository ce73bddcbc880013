/**
 * `karpenter_build_info{version, goversion, goarch, commit}` (kubernetes-sigs/karpenter `pkg/operator/operator.go`
 * `BuildInfo`): a gauge with the constant value 1 labelled by what capenter was built from. capenter is not a Go
 * program: `goversion` carries the JavaScript runtime's version (`process.version`, e.g. `v22.11.0`) and `goarch`
 * its architecture in Go's spelling (`amd64`, `arm64`); `commit` is `$CAPENTER_COMMIT` (set by the image build),
 * else empty.
 */
import { Gauge, type Registry } from 'prom-client';

/** capenter's release version (as `package.json` and `capenter --version`). */
export const CAPENTER_VERSION = '0.1.0';

/** Node.js `process.arch` → Go's `GOARCH` spelling (unknown ones pass through). */
export function goArch(arch: string): string {
  return ({ x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm' } as Record<string, string>)[arch] ?? arch;
}

/** Registers `karpenter_build_info` in `registry` (once) and sets it to 1 for this process. */
export function registerBuildInfo(registry: Registry, env: NodeJS.ProcessEnv = process.env): void {
  const name = 'karpenter_build_info';
  const g =
    (registry.getSingleMetric(name) as Gauge<'version' | 'goversion' | 'goarch' | 'commit'> | undefined) ??
    new Gauge({
      name,
      help: "A metric with a constant '1' value labeled by version from which karpenter was built.",
      labelNames: ['version', 'goversion', 'goarch', 'commit'],
      registers: [registry],
    });
  g.set(
    {
      version: CAPENTER_VERSION,
      goversion: process.version,
      goarch: goArch(process.arch),
      commit: env.CAPENTER_COMMIT ?? '',
    },
    1,
  );
}
