/**
 * {@link BootstrapDataStore} on Amazon S3 (the cluster's bucket, `AWSCluster.spec.s3Bucket.name`), as CAPA stores
 * Ignition user data: objects written with server-side encryption (SSE-S3), read back to detect a missing object,
 * deleted when the pool goes. Credentials and endpoint come from the injected client factory (one client per
 * region); errors name the bucket and key, never the data.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import type { BootstrapDataStore, BootstrapLocation } from '../bootstrap.ts';

/** Thrown when an S3 call fails (names the object, never its content). */
export class BootstrapStoreError extends Error {
  readonly code = 'BootstrapStoreFailed' as const;
}

/** Bootstrap data in S3; see the module comment. */
export class S3BootstrapStore implements BootstrapDataStore {
  private readonly clients = new Map<string, S3Client>();

  /** `config(region)` gives the SDK client configuration (endpoint, credentials) for a region. */
  constructor(private readonly config: (region: string) => S3ClientConfig = (region) => ({ region })) {}

  private client(region: string): S3Client {
    let c = this.clients.get(region);
    if (!c) {
      c = new S3Client({ forcePathStyle: true, ...this.config(region), region });
      this.clients.set(region, c);
    }
    return c;
  }

  private fail(op: string, loc: BootstrapLocation, err: unknown): never {
    const name = (err as { name?: string }).name ?? 'Error';
    throw new BootstrapStoreError(
      `S3 ${op} s3://${loc.bucket}/${loc.key} (${loc.region}) failed: ${name}: ${(err as Error).message}`,
    );
  }

  async put(loc: BootstrapLocation, data: Buffer): Promise<void> {
    try {
      await this.client(loc.region).send(
        new PutObjectCommand({
          Bucket: loc.bucket,
          Key: loc.key,
          Body: data,
          ServerSideEncryption: 'AES256',
          ContentType: 'application/octet-stream',
        }),
      );
    } catch (err) {
      this.fail('PutObject', loc, err);
    }
  }

  async get(loc: BootstrapLocation): Promise<Buffer | undefined> {
    try {
      const r = await this.client(loc.region).send(
        new GetObjectCommand({ Bucket: loc.bucket, Key: loc.key }),
      );
      const bytes = await r.Body?.transformToByteArray();
      return bytes ? Buffer.from(bytes) : Buffer.alloc(0);
    } catch (err) {
      const name = (err as { name?: string }).name;
      if (name === 'NoSuchKey' || name === 'NotFound') return undefined;
      this.fail('GetObject', loc, err);
    }
  }

  async delete(loc: BootstrapLocation): Promise<void> {
    try {
      await this.client(loc.region).send(new DeleteObjectCommand({ Bucket: loc.bucket, Key: loc.key }));
    } catch (err) {
      const name = (err as { name?: string }).name;
      if (name === 'NoSuchKey' || name === 'NoSuchBucket') return;
      this.fail('DeleteObject', loc, err);
    }
  }

  /** Closes the SDK clients. */
  close(): void {
    for (const c of this.clients.values()) c.destroy();
    this.clients.clear();
  }
}
