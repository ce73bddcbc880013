/**
 * `capenter apiserver`: run the embedded Kubernetes API server on loopback until SIGINT/SIGTERM and
 * write a kubeconfig for kubectl and clients. The server (ajv, CEL, selfsigned) is imported when the command runs,
 * not with the program (see scripts/build.ts).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';

/** Options of the apiserver command. */
export interface ApiserverCommandOptions {
  port: string;
  host: string;
  kubeconfigOut: string;
}

/** Register `capenter apiserver [--port N] [--kubeconfig-out PATH]`. */
export function registerApiserverCommand(program: Command): void {
  program
    .command('apiserver')
    .description('run the embedded Kubernetes API server (HTTPS on loopback) until interrupted')
    .option('--port <port>', 'TCP port (0 = any free port)', '6443')
    .option('--host <host>', 'listen address', '127.0.0.1')
    .option('--kubeconfig-out <path>', 'where to write the kubeconfig', '.capenter/kubeconfig')
    .action(async (opts: ApiserverCommandOptions) => {
      const port = Number(opts.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        process.stderr.write(`error: --port must be an integer between 0 and 65535, got "${opts.port}"\n`);
        process.exitCode = 2;
        return;
      }
      const { startEmbeddedCluster } = await import('../sim/apiserver/index.ts');
      const cluster = await startEmbeddedCluster({ port, host: opts.host });
      const path = resolve(process.cwd(), opts.kubeconfigOut);
      await cluster.writeKubeconfig(path);
      process.stdout.write(
        `embedded API server listening on ${cluster.url}\nkubeconfig written to ${path}\n`,
      );
      process.stdout.write(`try: kubectl --kubeconfig ${path} get nodes\n`);
      await new Promise<void>((done) => {
        const stop = (): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          void cluster.stop().then(done);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      process.stdout.write('embedded API server stopped\n');
    });
}
