/**
 * Bootstrap user data of a KarpenterMachinePool: the Secret the bootstrap provider renders (`value`, `format`
 * `cloud-config` | `ignition`, CAPI bootstrap contract), where it is stored (the cluster's S3 bucket, as CAPA does
 * for Ignition), and the fixed stub the EC2NodeClass carries instead of the data.
 *
 * Why a stub: the kubeadm bootstrap provider rotates a pool's join token about every 12.5 minutes. Inline user
 * data would change the EC2NodeClass at every rotation and drift every node; the stub only names the S3 object,
 * so a rotation rewrites that object, new launches read the new token and running nodes never drift.
 * The data itself is a secret (join token): it is never logged, never put in an error message, only hashed.
 */
import { createHash } from 'node:crypto';
import type { BootstrapDataStore, BootstrapLocation } from '../../cloudprovider/bootstrap.ts';
import type { Secret } from '../../kube/types.ts';

export type { BootstrapDataStore, BootstrapLocation } from '../../cloudprovider/bootstrap.ts';

/** Format of bootstrap data (CAPI bootstrap contract `format` key; absent means cloud-config). */
export type BootstrapFormat = 'cloud-config' | 'ignition';

/** Decoded bootstrap data. `value` is secret: never log it. */
export interface BootstrapData {
  value: Buffer;
  format: BootstrapFormat;
  /** SHA-256 hex of `value` (safe to log and to store as an annotation). */
  sha256: string;
}

/** Thrown for a bootstrap Secret without usable data (names the Secret and the key; never the data). */
export class BootstrapSecretError extends Error {
  readonly code = 'BootstrapSecretInvalid' as const;
}

/**
 * Reads a bootstrap Secret: `data.value` (base64, required) and `data.format` (base64 of `cloud-config` or
 * `ignition`, default cloud-config).
 * @throws BootstrapSecretError when `value` is missing or empty, or `format` is unknown.
 */
export function readBootstrapSecret(secret: Secret): BootstrapData {
  const id = `Secret ${secret.metadata.namespace ?? ''}/${secret.metadata.name ?? ''}`;
  const raw = secret.data?.value;
  const value =
    raw !== undefined ? Buffer.from(raw, 'base64') : Buffer.from(secret.stringData?.value ?? '', 'utf8');
  if (value.length === 0)
    throw new BootstrapSecretError(`${id} has no data.value; the bootstrap provider has not rendered it yet`);
  const f = secret.data?.format
    ? Buffer.from(secret.data.format, 'base64').toString('utf8')
    : (secret.stringData?.format ?? 'cloud-config');
  if (f !== 'cloud-config' && f !== 'ignition')
    throw new BootstrapSecretError(`${id} data.format is "${f}"; expected cloud-config or ignition`);
  return { value, format: f, sha256: createHash('sha256').update(value).digest('hex') };
}

/** S3 key of a pool's bootstrap data: `karpenter-machine-pool/<namespace>/<name>` (pool names repeat across namespaces). */
export function bootstrapKey(namespace: string, name: string): string {
  return `karpenter-machine-pool/${namespace}/${name}`;
}

/**
 * The fixed user data the EC2NodeClass carries (`amiFamily: Custom`): it fetches the real data from S3 at boot.
 * - ignition: an Ignition 3.4.0 config merging `s3://bucket/key` (Ignition fetches S3 with the instance role,
 *   as CAPA's Ignition flow and the community operator do);
 * - cloud-config: a shell script (cloud-init runs `#!` user data) that copies the object with the AWS CLI and
 *   runs it through cloud-init.
 * The stub depends only on the location and format, never on the data: rotations do not change it. Pure.
 */
export function userDataStub(loc: BootstrapLocation, format: BootstrapFormat): string {
  const url = `s3://${loc.bucket}/${loc.key}`;
  if (format === 'ignition') {
    return JSON.stringify({
      ignition: { version: '3.4.0', config: { merge: [{ source: url }] } },
    });
  }
  return [
    '#!/bin/bash',
    '# capenter: the bootstrap data (with its rotating join token) lives in S3, not in the EC2NodeClass.',
    'set -euo pipefail',
    'umask 077',
    'mkdir -p /etc/capenter',
    `for i in $(seq 1 30); do aws s3 cp --region ${loc.region} ${url} /etc/capenter/bootstrap-data && break; sleep 2; done`,
    'cloud-init --file /etc/capenter/bootstrap-data modules --mode config',
    'cloud-init --file /etc/capenter/bootstrap-data modules --mode final',
    '',
  ].join('\n');
}

/** An in-process {@link BootstrapDataStore} (the embedded/kwok stand-in for S3); keyed by region, bucket and key. */
export class InMemoryBootstrapStore implements BootstrapDataStore {
  private readonly objects = new Map<string, Buffer>();
  /** Number of writes so far (tests read it to prove a rotation wrote once). */
  writes = 0;

  private id(loc: BootstrapLocation): string {
    return `${loc.region}|${loc.bucket}|${loc.key}`;
  }

  async put(loc: BootstrapLocation, data: Buffer): Promise<void> {
    this.writes++;
    this.objects.set(this.id(loc), Buffer.from(data));
  }

  async get(loc: BootstrapLocation): Promise<Buffer | undefined> {
    const v = this.objects.get(this.id(loc));
    return v ? Buffer.from(v) : undefined;
  }

  async delete(loc: BootstrapLocation): Promise<void> {
    this.objects.delete(this.id(loc));
  }

  /** Number of stored objects. */
  get size(): number {
    return this.objects.size;
  }
}
