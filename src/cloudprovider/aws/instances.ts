/**
 * EC2 instance calls of the aws provider, batched across NodeClaims as upstream batches them
 * (aws/karpenter-provider-aws `pkg/batcher`: CreateFleet merges identical requests, 35 ms idle / 1 s max;
 * DescribeInstances and TerminateInstances merge instance IDs, 100 ms idle / 1 s max), with throttling backoff.
 */
import {
  CreateFleetCommand,
  type CreateFleetCommandInput,
  type CreateFleetError,
  DescribeInstancesCommand,
  type EC2Client,
  type Filter,
  type Instance,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import type { Registry } from 'prom-client';
import { Batcher } from './batcher.ts';
import { isAwsNotFound, withThrottleRetry } from './retry.ts';

/** One instance a fleet launched for one request. */
export interface FleetInstance {
  instanceId: string;
  instanceType: string;
  subnetId: string | undefined;
  zone: string | undefined;
  /** `spot` or `on-demand`. */
  lifecycle: string;
}

/** What one CreateFleet request got: its instance (when any) and the fleet's errors (shared by the batch). */
export interface FleetResult {
  instance: FleetInstance | undefined;
  errors: CreateFleetError[];
}

/** Instance states that count as gone (upstream treats shutting-down/terminated instances as not found). */
const GONE = new Set(['shutting-down', 'terminated']);

function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object' && !(v instanceof Date)) {
    return `{${Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, x]) => `${JSON.stringify(k)}:${stable(x)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** Batched instance operations on one EC2 client. */
export class Instances {
  private readonly fleets: Batcher<CreateFleetCommandInput, FleetResult>;
  private readonly describes: Batcher<string, Instance | null>;
  private readonly terminates: Batcher<string, true>;

  /** `registry`: where the batchers' upstream metrics are observed (none when absent). */
  constructor(
    private readonly ec2: EC2Client,
    registry?: Registry,
  ) {
    const metrics = (name: string) => (registry ? { metrics: { name, registry } } : {});
    this.fleets = new Batcher({
      ...metrics('create_fleet'),
      key: (i) =>
        stable({
          ...i,
          TargetCapacitySpecification: { ...i.TargetCapacitySpecification, TotalTargetCapacity: 0 },
        }),
      exec: (inputs) => this.execFleet(inputs),
      idleMs: 35,
      maxMs: 1000,
      maxItems: 1000,
    });
    this.describes = new Batcher({
      ...metrics('describe_instances'),
      key: () => 'describe',
      exec: (ids) => this.execDescribe(ids),
      idleMs: 100,
      maxMs: 1000,
      maxItems: 500,
    });
    this.terminates = new Batcher({
      ...metrics('terminate_instances'),
      key: () => 'terminate',
      exec: (ids) => this.execTerminate(ids),
      idleMs: 100,
      maxMs: 1000,
      maxItems: 500,
    });
  }

  /** Number of EC2 calls the batchers made, by operation. */
  get batchCounts(): { createFleet: number; describeInstances: number; terminateInstances: number } {
    return {
      createFleet: this.fleets.batches,
      describeInstances: this.describes.batches,
      terminateInstances: this.terminates.batches,
    };
  }

  /** Launches one instance with `input` (TotalTargetCapacity 1), batched with identical requests. */
  createFleet(input: CreateFleetCommandInput): Promise<FleetResult> {
    return this.fleets.add(input);
  }

  /** The instance with `id`, or undefined when it does not exist or is shutting down / terminated. */
  async get(id: string): Promise<Instance | undefined> {
    const inst = await this.describes.add(id);
    if (!inst || GONE.has(inst.State?.Name ?? '')) return undefined;
    return inst;
  }

  /** Terminates `id` (batched). @throws the EC2 error; a missing instance is an error with a NotFound code. */
  async terminate(id: string): Promise<void> {
    await this.terminates.add(id);
  }

  /** Every live instance matching `filters` (paged). */
  async list(filters: Filter[]): Promise<Instance[]> {
    const out: Instance[] = [];
    let token: string | undefined;
    do {
      const page = await withThrottleRetry(() =>
        this.ec2.send(
          new DescribeInstancesCommand({
            Filters: [
              ...filters,
              { Name: 'instance-state-name', Values: ['pending', 'running', 'stopping', 'stopped'] },
            ],
            MaxResults: 1000,
            ...(token ? { NextToken: token } : {}),
          }),
        ),
      );
      for (const r of page.Reservations ?? []) for (const i of r.Instances ?? []) out.push(i);
      token = page.NextToken;
    } while (token);
    return out;
  }

  private async execFleet(inputs: CreateFleetCommandInput[]): Promise<Array<FleetResult | Error>> {
    const first = inputs[0]!;
    const merged: CreateFleetCommandInput = {
      ...first,
      TargetCapacitySpecification: {
        ...first.TargetCapacitySpecification!,
        TotalTargetCapacity: inputs.length,
      },
    };
    const out = await withThrottleRetry(() => this.ec2.send(new CreateFleetCommand(merged)));
    const launched: FleetInstance[] = [];
    for (const item of out.Instances ?? []) {
      const ov = item.LaunchTemplateAndOverrides?.Overrides;
      for (const id of item.InstanceIds ?? []) {
        launched.push({
          instanceId: id,
          instanceType: item.InstanceType ?? ov?.InstanceType ?? '',
          subnetId: ov?.SubnetId,
          zone: ov?.AvailabilityZone,
          lifecycle: item.Lifecycle ?? 'on-demand',
        });
      }
    }
    const errors = out.Errors ?? [];
    return inputs.map((_, i) => ({ instance: launched[i], errors }));
  }

  private async execDescribe(ids: string[]): Promise<Array<Instance | null | Error>> {
    const unique = [...new Set(ids)];
    const found = new Map<string, Instance>();
    const describe = async (list: string[]): Promise<void> => {
      const page = await withThrottleRetry(() =>
        this.ec2.send(new DescribeInstancesCommand({ InstanceIds: list })),
      );
      for (const r of page.Reservations ?? [])
        for (const i of r.Instances ?? []) if (i.InstanceId) found.set(i.InstanceId, i);
    };
    try {
      await describe(unique);
    } catch (err) {
      if (!isAwsNotFound(err)) throw err;
      // EC2 fails the whole call when one ID does not exist: ask one by one.
      await Promise.all(
        unique.map((id) =>
          describe([id]).catch((e: unknown) => {
            if (!isAwsNotFound(e)) throw e;
          }),
        ),
      );
    }
    return ids.map((id) => found.get(id) ?? null);
  }

  private async execTerminate(ids: string[]): Promise<Array<true | Error>> {
    const unique = [...new Set(ids)];
    try {
      await withThrottleRetry(() => this.ec2.send(new TerminateInstancesCommand({ InstanceIds: unique })));
      return ids.map(() => true as const);
    } catch (err) {
      if (!isAwsNotFound(err) || unique.length === 1) return ids.map(() => err as Error);
      const results = new Map<string, true | Error>();
      await Promise.all(
        unique.map(async (id) => {
          try {
            await withThrottleRetry(() =>
              this.ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] })),
            );
            results.set(id, true);
          } catch (e) {
            results.set(id, e as Error);
          }
        }),
      );
      return ids.map((id) => results.get(id)!);
    }
  }
}
