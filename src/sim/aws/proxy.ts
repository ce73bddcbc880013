/**
 * A small HTTP proxy in front of moto (the AWS API emulator) that fills moto's gaps for Karpenter's use and injects
 * faults. Clients point `AWS_ENDPOINT_URL` (or the SDK `endpoint`) at the proxy; everything it does not handle is
 * forwarded to moto unchanged. Used by the aws provider's tests, the benchmark, and `capenter start
 * --cloud-provider aws` against an emulator.
 *
 * What it changes (the gaps were found by reading moto 5.2.3):
 * - EC2 `CreateFleet`: moto always launches the first override and never returns `Errors[]`. The proxy orders the
 *   overrides by the {@link PriceTable} (spot price for spot, on-demand price otherwise; `prioritized` strategies by
 *   `Priority`), skips the ones with an injected capacity error (reporting each in `Errors[]` as AWS does) and
 *   forwards the request with only the first good override. When every override fails it answers itself: no
 *   instances, one error per override. After the launch it applies the launch template's security groups and
 *   instance profile to the new instances (moto ignores both for fleets).
 * - EC2 `DescribeSpotPriceHistory`: served from the price table (moto answers 0.00001 for everything).
 * - EC2 `DescribeLaunchTemplates`: moto cuts at `MaxResults` (default 15) without a `NextToken`; the proxy asks moto
 *   for everything and paginates itself.
 * - SSM `GetParameter`/`GetParameters` of the EKS-optimized (`/aws/service/eks/...`), Bottlerocket
 *   (`/aws/service/bottlerocket/...`) and Windows EKS (`/aws/service/ami-windows-latest/...EKS_Optimized...`)
 *   image parameters: an image of moto's region with the parameter's architecture (moto has none of them).
 * - Pricing `GetProducts` (moto has no Pricing API): on-demand Linux prices from the price table, in the Price List
 *   JSON shape.
 * - EC2 capacity reservations (moto has none; `./reservations.ts`): `CreateCapacityReservation`,
 *   `DescribeCapacityReservations`, `CancelCapacityReservation` served from memory; a fleet override whose launch
 *   template targets a reservation takes one of its free instances (`ReservationCapacityExceeded` when none is left,
 *   `InvalidParameterCombination` for another instance type or zone); `DescribeInstances` reports each such
 *   instance's `capacityReservationId`; `TerminateInstances` frees its slot. Capacity blocks and interruptible
 *   reservations: {@link AwsEmulatorProxy.reservations} `.add(...)`.
 * - EC2 instance tenancy (moto launches every instance with default tenancy and ignores a launch template's
 *   `Placement.Tenancy`): a fleet instance launched from a template with `Placement.Tenancy=dedicated` is reported
 *   by `DescribeInstances` with `<placement><tenancy>dedicated</tenancy>` (aws provider's `instance-tenancy`).
 * - EC2 placement groups (moto has none; `./placementgroups.ts`): `CreatePlacementGroup`, `DescribePlacementGroups`
 *   (`GroupName.N`, `GroupId.N`, filters `state`, `strategy`, `group-name`, …; an unknown name is
 *   `InvalidPlacementGroup.Unknown`) and `DeletePlacementGroup` served from memory; a fleet instance launched from a
 *   template with `Placement.GroupId`/`GroupName` is reported by `DescribeInstances` with that group's
 *   `<groupName>`, `<groupId>` and, in a `partition` group, `<partitionNumber>` (the template's, else the partition
 *   with the fewest instances). A `spread` group takes seven instances per zone: an override beyond fails with EC2's
 *   `InsufficientInstanceCapacity` "You've reached the limit of instances in this spread placement group…".
 *   {@link AwsEmulatorProxy.placementGroups} `.setState(...)` makes a group `pending`.
 * - EC2 instance metadata options and detailed monitoring of fleet instances (moto launches them with its own
 *   metadata options, tokens `optional` and hop limit 1, and monitoring `disabled`, whatever the template says; it
 *   has no `MonitorInstances`): after the launch the proxy applies the template's `MetadataOptions` with
 *   `ModifyInstanceMetadataOptions`, and `DescribeInstances` reports an instance launched from a template with
 *   `Monitoring.Enabled=true` with `<monitoring><state>enabled</state></monitoring>` (EC2NodeClass
 *   `metadataOptions`, `detailedMonitoring`).
 * - EC2 `DescribeInstanceStatus` (`./instancestatus.ts`): moto reports every running instance's checks `ok`, has no
 *   scheduled events and ignores the `instance-status.status`, `system-status.status` and `event.code` filters; the
 *   proxy answers from moto's instances with the health injected by {@link AwsEmulatorProxy.setInstanceHealth}
 *   (impaired instance/system checks with their `impairedSince`, scheduled events), filtered and paginated as EC2.
 * - EC2 `DryRun=true` on `CreateFleet`, `RunInstances`, `CreateLaunchTemplate` (moto ignores it and launches):
 *   answered HTTP 412 `DryRunOperation` as EC2 does; an action denied with {@link AwsEmulatorProxy.deny} is answered
 *   HTTP 403 `UnauthorizedOperation`, dry run or not (`./dryrun.ts`; the EC2NodeClass validation's auth checks).
 * - Faults: capacity errors per offering ({@link AwsEmulatorProxy.injectCapacityError}), `RequestLimitExceeded`
 *   throttling per action ({@link AwsEmulatorProxy.throttle}), lost fleet replies
 *   ({@link AwsEmulatorProxy.loseFleetReplies}).
 * - Counters of the calls clients made, by `service:Action` ({@link AwsEmulatorProxy.calls}; a dry run of
 *   `./dryrun.ts` `DRY_RUN_ACTIONS` as `ec2:<Action> (DryRun)`).
 *
 * Listens on 127.0.0.1 only. Control endpoints for out-of-process users (JSON): `POST /capenter-proxy/faults`
 * (body: a {@link CapacityFault}, `{throttle: {action, times}}`, `{deny: {action}}` or `{instanceHealth: {instanceId, ...InjectedHealth}}`),
 * `DELETE /capenter-proxy/faults` (also makes every instance healthy again),
 * `GET /capenter-proxy/calls`. `POST /moto-api/reset` resets moto and the proxy's faults, caches and counters.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  AssociateIamInstanceProfileCommand,
  DescribeAvailabilityZonesCommand,
  DescribeImagesCommand,
  DescribeInstancesCommand,
  DescribeLaunchTemplateVersionsCommand,
  DescribeSubnetsCommand,
  EC2Client,
  ModifyInstanceAttributeCommand,
  ModifyInstanceMetadataOptionsCommand,
  type ResponseLaunchTemplateData,
} from '@aws-sdk/client-ec2';
import { DeniedActions, isDryRun } from './dryrun.ts';
import {
  type InjectedHealth,
  type InstanceFacts,
  InstanceHealthStatuses,
  InstanceStatusRequestError,
} from './instancestatus.ts';
import { PlacementGroupRequestError, PlacementGroupStore } from './placementgroups.ts';
import { type PriceTable, spotPrice } from './prices.ts';
import { CapacityReservations, type EmulatedReservation } from './reservations.ts';

/** EC2 actions whose answers depend only on the request (moto's fixed instance-type catalogue): answered once. */
const STATIC_EC2_ACTIONS = new Set(['DescribeInstanceTypes', 'DescribeInstanceTypeOfferings']);

/** One injected capacity fault: fleet overrides matching it fail with `code`. Unset fields match anything. */
export interface CapacityFault {
  instanceType?: string;
  zone?: string;
  capacityType?: 'spot' | 'on-demand';
  /** EC2 fleet error code, default `InsufficientInstanceCapacity`. */
  code?: string;
  /** How many fleet overrides it fails before it is used up; default unlimited. */
  times?: number;
}

/** Options of {@link AwsEmulatorProxy.start}. */
export interface AwsEmulatorProxyOptions {
  /** moto's endpoint, e.g. `http://127.0.0.1:5000`. */
  upstream: string;
  /** Prices by region (injected; capenter's: `src/embedded/rules.ts` `catalogPriceTable`). */
  prices: (region: string) => PriceTable;
  /** Extra SSM parameters (name → value) served as they are; wins over the derived image parameters. */
  ssmParameters?: Record<string, string>;
  /** Called for each proxy-side problem (never with request bodies: user data may carry secrets). */
  onError?: (err: unknown, context: string) => void;
}

interface Override {
  config: number;
  fields: Record<string, string>;
  zone: string;
  price: number;
}

/** The launch template data the proxy reads (`DescribeLaunchTemplateVersions`). */
type RequestedTemplateData = ResponseLaunchTemplateData;

/** EC2's fleet error message once a spread placement group holds seven instances in a zone. */
const SPREAD_LIMIT_MESSAGE =
  "You've reached the limit of instances in this spread placement group. A spread placement group can have up to seven instances per Availability Zone.";

const EC2_CAPACITY_MESSAGE: Record<string, string> = {
  InsufficientInstanceCapacity:
    'We currently do not have sufficient capacity in the Availability Zone you requested.',
  MaxSpotInstanceCountExceeded: 'Max spot instance count exceeded',
  VcpuLimitExceeded: 'You have requested more vCPU capacity than your current vCPU limit allows.',
  UnfulfillableCapacity: 'Unable to fulfill capacity due to your request configuration.',
  InsufficientFreeAddressesInSubnet:
    'There are not enough free addresses in subnet to satisfy the requested number of instances.',
  ReservationCapacityExceeded: 'There is no capacity left in the targeted capacity reservation.',
  InvalidParameterCombination:
    'The instance type or Availability Zone does not match the targeted capacity reservation.',
};

function xmlEscape(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** `service` and `region` from a SigV4 `Authorization` header's credential scope. */
function credentialScope(auth: string | undefined): { service: string; region: string } | undefined {
  const m = /Credential=[^/]+\/\d+\/([^/]+)\/([^/]+)\/aws4_request/.exec(auth ?? '');
  return m ? { region: m[1]!, service: m[2]! } : undefined;
}

/** The `<item>…</item>` elements directly inside an XML list (nested items, e.g. tag sets, stay inside theirs). */
function topLevelItems(xml: string): string[] {
  const out: string[] = [];
  const re = /<item>|<\/item>/g;
  let depth = 0;
  let start = -1;
  for (let m = re.exec(xml); m; m = re.exec(xml)) {
    if (m[0] === '<item>') {
      if (depth === 0) start = m.index;
      depth++;
    } else {
      depth--;
      if (depth === 0 && start >= 0) out.push(xml.slice(start, m.index + m[0].length));
    }
  }
  return out;
}

/**
 * A moto `DescribeInstances` answer with `<tenancy>dedicated</tenancy>` in the `<placement>` of each instance in
 * `dedicated` (moto writes `<tenancy>default</tenancy>` for every instance, after its `<instanceId>`).
 */
export function withDedicatedTenancy(xml: string, dedicated: ReadonlySet<string>): string {
  if (dedicated.size === 0) return xml;
  const parts = xml.split('<instanceId>');
  for (let i = 1; i < parts.length; i++) {
    const id = parts[i]!.slice(0, parts[i]!.indexOf('</instanceId>'));
    if (!dedicated.has(id)) continue;
    parts[i] = parts[i]!.replace(
      /(<placement>(?:(?!<\/placement>).)*?<tenancy>)default(<\/tenancy>)/s,
      '$1dedicated$2',
    );
  }
  return parts.join('<instanceId>');
}

/**
 * A moto `DescribeInstances` answer with `<monitoring><state>enabled</state></monitoring>` for each instance in
 * `monitored` (moto writes `disabled` for every fleet instance).
 */
export function withDetailedMonitoring(xml: string, monitored: ReadonlySet<string>): string {
  if (monitored.size === 0) return xml;
  const parts = xml.split('<instanceId>');
  for (let i = 1; i < parts.length; i++) {
    const id = parts[i]!.slice(0, parts[i]!.indexOf('</instanceId>'));
    if (!monitored.has(id)) continue;
    parts[i] = parts[i]!.replace(/(<monitoring>\s*<state>)disabled(<\/state>)/, '$1enabled$2');
  }
  return parts.join('<instanceId>');
}

/** The fleet's launch template overrides from a CreateFleet query form, in form order, unpriced. */
function parseOverrides(form: URLSearchParams): Override[] {
  const byKey = new Map<string, Override>();
  for (const [k, v] of form) {
    const m = /^LaunchTemplateConfigs\.(\d+)\.Overrides\.(\d+)\.(.+)$/.exec(k);
    if (!m) continue;
    const key = `${m[1]}.${m[2]}`;
    let o = byKey.get(key);
    if (!o) {
      o = { config: Number(m[1]), fields: {}, zone: '', price: Number.POSITIVE_INFINITY };
      byKey.set(key, o);
    }
    o.fields[m[3]!] = v;
  }
  return [...byKey.values()];
}

/** The `LaunchTemplateSpecification.*` fields of launch template config `config` of a CreateFleet form. */
function launchTemplateSpecOf(form: URLSearchParams, config: number): Record<string, string> {
  const out: Record<string, string> = {};
  const prefix = `LaunchTemplateConfigs.${config}.LaunchTemplateSpecification.`;
  for (const [k, v] of form) if (k.startsWith(prefix)) out[k.slice(prefix.length)] = v;
  return out;
}

/** `fields` as EC2 response XML elements (`LaunchTemplateName` → `<launchTemplateName>…</launchTemplateName>`). */
function xmlFields(fields: Record<string, string>): string {
  return Object.entries(fields)
    .map(
      ([k, v]) =>
        `<${k[0]!.toLowerCase()}${k.slice(1)}>${xmlEscape(v)}</${k[0]!.toLowerCase()}${k.slice(1)}>`,
    )
    .join('');
}

/** The `<errorSet>` items of CreateFleet for the overrides that hit an injected capacity error. */
function fleetErrorXml(
  errors: ReadonlyArray<{ o: Override; code: string; message?: string }>,
  form: URLSearchParams,
  capacityType: string,
): string {
  return errors
    .map(({ o, code, message }) => {
      const lt = xmlFields(launchTemplateSpecOf(form, o.config));
      const ov = xmlFields(o.fields);
      return (
        `<item><launchTemplateAndOverrides><launchTemplateSpecification>${lt}</launchTemplateSpecification>` +
        `<overrides>${ov}</overrides></launchTemplateAndOverrides><lifecycle>${capacityType}</lifecycle>` +
        `<errorCode>${code}</errorCode><errorMessage>${xmlEscape(message ?? EC2_CAPACITY_MESSAGE[code] ?? code)}</errorMessage></item>`
      );
    })
    .join('');
}

/** The CreateFleet form with one launch template config (`spec`) holding only the `chosen` override. */
function singleOverrideForm(
  form: URLSearchParams,
  spec: Record<string, string>,
  chosen: Override,
): URLSearchParams {
  const rewritten = new URLSearchParams();
  for (const [k, v] of form) if (!k.startsWith('LaunchTemplateConfigs.')) rewritten.append(k, v);
  for (const [k, v] of Object.entries(spec))
    rewritten.append(`LaunchTemplateConfigs.1.LaunchTemplateSpecification.${k}`, v);
  for (const [k, v] of Object.entries(chosen.fields))
    rewritten.append(`LaunchTemplateConfigs.1.Overrides.1.${k}`, v);
  return rewritten;
}

/** A CreateFleet response `text` with the `errorXml` items added to its `<errorSet>` (created when absent). */
function withFleetErrors(text: string, errorXml: string): string {
  return /<errorSet\s*\/>/.test(text)
    ? text.replace(/<errorSet\s*\/>/, `<errorSet>${errorXml}</errorSet>`)
    : /<errorSet>/.test(text)
      ? text.replace('<errorSet>', `<errorSet>${errorXml}`)
      : text.replace('</CreateFleetResponse>', `<errorSet>${errorXml}</errorSet></CreateFleetResponse>`);
}

/** How many calls {@link AwsEmulatorProxy.signedCalls} keeps. */
const SIGNED_LOG_SIZE = 10_000;

/** The running proxy. */
export class AwsEmulatorProxy {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** Calls clients made through the proxy, by `service:Action` (e.g. `ec2:CreateFleet`). */
  readonly calls = new Map<string, number>();
  /**
   * The last {@link SIGNED_LOG_SIZE} calls in arrival order: `service:Action` and the access key id that signed it
   * (from the SigV4 `Authorization` header; '' when unsigned), so a test can tell which credentials made a call
   * (e.g. a launch signed with an assumed role's `ASIA…` key). Cleared by {@link reset}.
   */
  readonly signedCalls: Array<{ call: string; accessKeyId: string }> = [];
  /** Fleet replies still to lose (see {@link loseFleetReplies}). */
  private repliesToLose = 0;
  /** CreateFleet calls that launched but answered an error (see {@link loseFleetReplies}; reset by {@link reset}). */
  lostFleetReplies = 0;
  /** Called with the instance IDs of each launch whose reply was lost. */
  onFleetReplyLost: ((instanceIds: string[]) => void) | undefined;
  /** The requests being answered now: what each is (`service:Action` once read, else method and URL) and since when. */
  private readonly open = new Map<http.IncomingMessage, { what: string; since: number }>();
  /** Requests being answered now (a fake-clock driver waits for 0 before moving time on). */
  get inFlight(): number {
    return this.open.size;
  }
  /** The emulated capacity reservations (cleared by {@link reset}). */
  readonly reservations = new CapacityReservations();
  /** SSM parameters published with {@link setSSMParameter} (cleared by {@link reset}). */
  private readonly publishedParameters = new Map<string, string>();
  /** The emulated placement groups and where fleet instances were placed (cleared by {@link reset}). */
  readonly placementGroups = new PlacementGroupStore();
  /** EC2 actions answered `UnauthorizedOperation` ({@link deny}; cleared by {@link clearFaults}). */
  private readonly denied = new DeniedActions();
  /** Injected instance health ({@link setInstanceHealth}). */
  private readonly instanceHealth = new InstanceHealthStatuses();
  /** Launch template (id or name, version) → the reservation it targets ('' for none); cleared by {@link reset}. */
  private readonly templateTargets = new Map<string, Promise<RequestedTemplateData | undefined>>();
  /** Fleet instances launched from a `Placement.Tenancy=dedicated` template (moto reports them as default). */
  private readonly dedicatedInstances = new Set<string>();
  /** Fleet instances launched from a template with `Monitoring.Enabled=true`. */
  private readonly monitoredInstances = new Set<string>();
  /** Fleet overrides failed by an injected {@link CapacityFault} so far (reset by {@link reset}). */
  capacityErrorsInjected = 0;
  private faults: CapacityFault[] = [];
  private throttles = new Map<string, number>();
  private readonly tables = new Map<string, PriceTable>();
  private readonly subnetZones = new Map<string, string>();
  private readonly zonesByRegion = new Map<string, string[]>();
  private readonly imagesByRegion = new Map<string, Promise<Record<string, string>>>();
  private readonly clients = new Map<string, EC2Client>();
  /** Answers of {@link STATIC_EC2_ACTIONS} by `region body` (kept across {@link reset}: moto's catalogue is fixed). */
  private readonly staticAnswers = new Map<
    string,
    { status: number; headers: Record<string, string>; body: string }
  >();

  private constructor(
    private readonly server: http.Server,
    private readonly opts: AwsEmulatorProxyOptions,
  ) {
    const addr = server.address() as AddressInfo;
    this.endpoint = `http://127.0.0.1:${addr.port}`;
  }

  /** Starts the proxy on a free 127.0.0.1 port. */
  static async start(opts: AwsEmulatorProxyOptions): Promise<AwsEmulatorProxy> {
    let proxy: AwsEmulatorProxy | undefined;
    const server = http.createServer((req, res) => {
      proxy!.open.set(req, { what: `${req.method} ${req.url}`, since: Date.now() });
      res.once('close', () => proxy!.open.delete(req));
      void proxy!.handle(req, res).catch((err: unknown) => {
        opts.onError?.(err, `${req.method} ${req.url}`);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`capenter AWS emulator proxy: ${(err as Error).message}`);
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    proxy = new AwsEmulatorProxy(server, opts);
    return proxy;
  }

  /** Fleet overrides matching `fault` fail with its code (until used up). */
  injectCapacityError(fault: CapacityFault): void {
    this.faults.push({ ...fault });
  }

  /** The next `times` calls of EC2 action `action` (e.g. `CreateFleet`) fail with `RequestLimitExceeded` (HTTP 503). */
  throttle(action: string, times: number): void {
    this.throttles.set(action, (this.throttles.get(action) ?? 0) + times);
  }

  /**
   * The next `times` CreateFleet calls that launch an instance answer `500 InternalError` instead of the fleet: the
   * instance exists and the caller does not know (a reply lost on the way, or a process that died right after).
   */
  loseFleetReplies(times: number): void {
    this.repliesToLose += times;
  }

  /**
   * Instance `instanceId`'s checks and scheduled events as `DescribeInstanceStatus` reports them from now on (e.g.
   * `{instanceStatus: 'impaired', impairedSince: '2024-01-01T00:00:00Z'}` or `{events: [{code: 'instance-retirement'}]}`).
   * @throws Error naming the field for an unknown status, a bad time or an event without code.
   */
  setInstanceHealth(instanceId: string, health: InjectedHealth): void {
    this.instanceHealth.set(instanceId, health);
  }

  /**
   * From now on every call of EC2 `action` (e.g. `CreateFleet`, dry run or not) is answered HTTP 403
   * `UnauthorizedOperation`, as for an IAM identity without `ec2:<action>` (see `./dryrun.ts`); until
   * {@link clearFaults} or {@link reset}.
   * @throws Error when `action` is not an EC2 action name.
   */
  deny(action: string): void {
    this.denied.deny(action);
  }

  /** Drops every fault, throttle and denied action, and makes every instance healthy again. */
  clearFaults(): void {
    this.denied.clear();
    this.instanceHealth.clear();
    this.faults = [];
    this.throttles.clear();
    this.repliesToLose = 0;
  }

  /** The price table used for `region` (mutable: tests change prices in place). */
  prices(region: string): PriceTable {
    let t = this.tables.get(region);
    if (!t) {
      t = this.opts.prices(region);
      this.tables.set(region, t);
    }
    return t;
  }

  /**
   * The requests not answered yet, oldest first, each as `service:Action for <s> s` (real seconds since it came):
   * for a report on a hung client.
   */
  inFlightRequests(): string[] {
    const now = Date.now();
    return [...this.open.values()]
      .sort((a, b) => a.since - b.since)
      .map((r) => `${r.what} for ${((now - r.since) / 1000).toFixed(1)} s`);
  }

  /** Sum of {@link calls} for one service (e.g. `ec2`). */
  callCount(service: string): number {
    let n = 0;
    for (const [k, v] of this.calls) if (k.startsWith(`${service}:`)) n += v;
    return n;
  }

  /** Resets moto (`POST /moto-api/reset`) and the proxy's faults, counters and caches (price tables stay). */
  async reset(): Promise<void> {
    const res = await fetch(`${this.opts.upstream}/moto-api/reset`, { method: 'POST' });
    if (!res.ok) throw new Error(`moto reset failed: HTTP ${res.status}`);
    this.clearFaults();
    this.calls.clear();
    this.signedCalls.length = 0;
    this.capacityErrorsInjected = 0;
    this.lostFleetReplies = 0;
    this.subnetZones.clear();
    this.reservations.clear();
    this.placementGroups.clear();
    this.templateTargets.clear();
    this.dedicatedInstances.clear();
    this.monitoredInstances.clear();
    this.publishedParameters.clear();
  }

  /**
   * Publishes SSM parameter `name` with `value` (e.g. a newer AMI ID under an EKS-optimized alias's
   * `/aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/x86_64/standard/recommended/image_id`, as AWS does when
   * it releases an AMI); it wins over the start options' and the derived image parameters until {@link reset}.
   * @throws Error when `name` does not start with `/` or `value` is empty.
   */
  setSSMParameter(name: string, value: string): void {
    if (!name.startsWith('/'))
      throw new Error(
        `SSM parameter name "${name}" must be a path starting with "/" (e.g. /aws/service/...)`,
      );
    if (value === '') throw new Error(`SSM parameter ${name}: the value must not be empty`);
    this.publishedParameters.set(name, value);
  }

  /** Stops listening and closes idle connections. */
  async stop(): Promise<void> {
    for (const c of this.clients.values()) c.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private ec2(region: string): EC2Client {
    let c = this.clients.get(region);
    if (!c) {
      c = new EC2Client({
        endpoint: this.opts.upstream,
        region,
        credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
        maxAttempts: 1,
      });
      this.clients.set(region, c);
    }
    return c;
  }

  private count(key: string, req?: http.IncomingMessage): void {
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
    const accessKeyId = /Credential=([^/]+)\//.exec(req?.headers.authorization ?? '')?.[1] ?? '';
    this.signedCalls.push({ call: key, accessKeyId });
    if (this.signedCalls.length > SIGNED_LOG_SIZE) this.signedCalls.shift();
    const open = req && this.open.get(req);
    if (open) open.what = key;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const url = req.url ?? '/';

    if (url.startsWith('/capenter-proxy/')) return this.control(req, res, url, body);
    if (url.startsWith('/moto-api/reset') && req.method === 'POST') {
      await this.reset();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }

    const scope = credentialScope(req.headers.authorization);
    const target = req.headers['x-amz-target'];
    const region = scope?.region ?? 'us-east-1';
    const service = scope?.service ?? 'unknown';
    if (typeof target === 'string') {
      const action = target.split('.').pop() ?? target;
      this.count(`${service}:${action}`, req);
      if (service === 'pricing' && action === 'GetProducts') return this.getProducts(res, region, body);
      if (service === 'ssm' && (action === 'GetParameter' || action === 'GetParameters')) {
        if (await this.ssm(req, res, region, action, body)) return;
      }
      return this.forward(req, res, body);
    }
    const form = new URLSearchParams(body);
    const action = form.get('Action') ?? new URL(url, 'http://x').searchParams.get('Action') ?? '';
    // a dry run is counted apart (`ec2:CreateFleet (DryRun)`): it launches nothing
    this.count(
      `${service}:${action || req.method}${isDryRun(service, action, form) ? ' (DryRun)' : ''}`,
      req,
    );
    if (service === 'ec2') {
      const left = this.throttles.get(action) ?? 0;
      if (left > 0) {
        this.throttles.set(action, left - 1);
        return this.ec2Error(res, 503, 'RequestLimitExceeded', 'Request limit exceeded.');
      }
      const refused = this.denied.answer(action, form);
      if (refused) return this.ec2Error(res, refused.status, refused.code, refused.message);
      if (action === 'CreateFleet') return this.createFleet(req, res, region, form);
      if (action === 'DescribeSpotPriceHistory') return this.spotPriceHistory(res, region, form);
      if (action === 'DescribeLaunchTemplates') return this.describeLaunchTemplates(req, res, form);
      if (action === 'DescribeInstanceStatus') return this.describeInstanceStatus(res, region, form);
      if (STATIC_EC2_ACTIONS.has(action)) return this.forwardCached(req, res, region, body);
      if (action.endsWith('CapacityReservation') || action === 'DescribeCapacityReservations')
        return this.capacityReservation(res, region, action, form);
      if (action.endsWith('PlacementGroup') || action === 'DescribePlacementGroups')
        return this.placementGroup(res, region, action, form);
      if (action === 'DescribeInstances' || action === 'TerminateInstances')
        return this.instancesInReservations(req, res, action, form, body);
    }
    return this.forward(req, res, body);
  }

  /** `DescribeInstanceStatus` from moto's instances and the injected health (see `./instancestatus.ts`). */
  private async describeInstanceStatus(
    res: http.ServerResponse,
    region: string,
    form: URLSearchParams,
  ): Promise<void> {
    const facts: InstanceFacts[] = [];
    let token: string | undefined;
    do {
      const page = await this.ec2(region).send(
        new DescribeInstancesCommand({ MaxResults: 1000, ...(token ? { NextToken: token } : {}) }),
      );
      for (const r of page.Reservations ?? [])
        for (const i of r.Instances ?? [])
          facts.push({
            id: i.InstanceId ?? '',
            zone: i.Placement?.AvailabilityZone ?? '',
            stateCode: i.State?.Code ?? 0,
            stateName: i.State?.Name ?? '',
          });
      token = page.NextToken;
    } while (token);
    let xml: string;
    try {
      xml = this.instanceHealth.describe(facts, form);
    } catch (err) {
      if (!(err instanceof InstanceStatusRequestError)) throw err;
      return this.ec2Error(res, 400, err.code, err.message);
    }
    res.writeHead(200, { 'content-type': 'text/xml' }).end(xml);
  }

  /** `CreateCapacityReservation`, `DescribeCapacityReservations`, `CancelCapacityReservation` (moto has none). */
  private capacityReservation(
    res: http.ServerResponse,
    region: string,
    action: string,
    form: URLSearchParams,
  ): void {
    const xml = { 'content-type': 'text/xml' };
    if (action === 'CreateCapacityReservation') {
      try {
        res.writeHead(200, xml).end(this.reservations.create(region, form));
      } catch (err) {
        this.ec2Error(res, 400, 'MissingParameter', (err as Error).message);
      }
      return;
    }
    if (action === 'DescribeCapacityReservations') {
      const out = this.reservations.describe(region, form);
      res.writeHead(out.status, xml).end(out.body);
      return;
    }
    if (action === 'CancelCapacityReservation') {
      const out = this.reservations.cancel(form);
      res.writeHead(out.status, xml).end(out.body);
      return;
    }
    this.ec2Error(res, 400, 'InvalidAction', `${action} is not emulated`);
  }

  /** `CreatePlacementGroup`, `DescribePlacementGroups`, `DeletePlacementGroup` (moto has none). */
  private placementGroup(
    res: http.ServerResponse,
    region: string,
    action: string,
    form: URLSearchParams,
  ): void {
    const store = this.placementGroups;
    try {
      const xml =
        action === 'CreatePlacementGroup'
          ? store.create(region, form)
          : action === 'DescribePlacementGroups'
            ? store.describe(region, form)
            : action === 'DeletePlacementGroup'
              ? store.delete(region, form)
              : undefined;
      if (xml === undefined) {
        this.ec2Error(res, 400, 'InvalidAction', `${action} is not emulated`);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/xml' }).end(xml);
    } catch (err) {
      if (!(err instanceof PlacementGroupRequestError)) throw err;
      this.ec2Error(res, 400, err.code, err.message);
    }
  }

  /** DescribeInstances with each instance's reservation added; TerminateInstances freeing reservation slots. */
  private async instancesInReservations(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    action: string,
    form: URLSearchParams,
    body: string,
  ): Promise<void> {
    const out = await this.upstream(req, body);
    if (out.status === 200 && action === 'DescribeInstances') {
      const body = this.placementGroups.annotateInstances(
        withDetailedMonitoring(
          withDedicatedTenancy(this.reservations.annotateInstances(out.body), this.dedicatedInstances),
          this.monitoredInstances,
        ),
      );
      res.writeHead(out.status, out.headers).end(body);
      return;
    }
    if (out.status === 200) {
      const ids: string[] = [];
      for (const [k, v] of form) if (/^InstanceId\.\d+$/.test(k)) ids.push(v);
      this.reservations.terminated(ids);
      this.placementGroups.terminated(ids);
    }
    res.writeHead(out.status, out.headers).end(out.body);
  }

  /** The capacity reservation launch template `spec` targets ('' for none), described once per template version. */
  private async templateTarget(region: string, spec: Record<string, string>): Promise<string> {
    const data = await this.templateData(region, spec);
    return data?.CapacityReservationSpecification?.CapacityReservationTarget?.CapacityReservationId ?? '';
  }

  /** The data of launch template `spec`, described once per template version. */
  private templateData(
    region: string,
    spec: Record<string, string>,
  ): Promise<RequestedTemplateData | undefined> {
    const key = `${spec.LaunchTemplateId ?? spec.LaunchTemplateName}|${spec.Version ?? '$Default'}`;
    let p = this.templateTargets.get(key);
    if (!p) {
      p = this.ec2(region)
        .send(
          new DescribeLaunchTemplateVersionsCommand({
            ...(spec.LaunchTemplateId
              ? { LaunchTemplateId: spec.LaunchTemplateId }
              : { LaunchTemplateName: spec.LaunchTemplateName }),
            Versions: [spec.Version ?? '$Default'],
          }),
        )
        .then((v) => v.LaunchTemplateVersions?.[0]?.LaunchTemplateData);
      p.catch(() => this.templateTargets.delete(key));
      this.templateTargets.set(key, p);
    }
    return p;
  }

  private async control(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: string,
    body: string,
  ): Promise<void> {
    const json = (status: number, v: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(v));
    };
    if (url === '/capenter-proxy/faults' && req.method === 'POST') {
      let parsed: CapacityFault & {
        throttle?: { action: string; times: number };
        deny?: { action: string };
        instanceHealth?: InjectedHealth & { instanceId?: string };
      };
      try {
        parsed = JSON.parse(body) as typeof parsed;
      } catch {
        return json(400, { error: 'body must be JSON: a CapacityFault or {"throttle":{"action","times"}}' });
      }
      if (parsed.instanceHealth) {
        const { instanceId, ...health } = parsed.instanceHealth;
        if (!instanceId) return json(400, { error: 'instanceHealth.instanceId is required (e.g. "i-0abc")' });
        try {
          this.setInstanceHealth(instanceId, health);
        } catch (err) {
          return json(400, { error: (err as Error).message });
        }
      } else if (parsed.deny) {
        try {
          this.deny(parsed.deny.action);
        } catch (err) {
          return json(400, { error: (err as Error).message });
        }
      } else if (parsed.throttle) this.throttle(parsed.throttle.action, parsed.throttle.times);
      else this.injectCapacityError(parsed);
      return json(200, { ok: true });
    }
    if (url === '/capenter-proxy/faults' && req.method === 'DELETE') {
      this.clearFaults();
      return json(200, { ok: true });
    }
    if (url === '/capenter-proxy/calls' && req.method === 'GET')
      return json(200, Object.fromEntries(this.calls));
    return json(404, { error: `unknown control endpoint ${req.method} ${url}` });
  }

  /**
   * Forwards a request whose answer never changes in moto (its instance-type catalogue) once per region and body,
   * then answers from memory: moto takes 2–3 s of CPU for each page of `DescribeInstanceTypes`, and every new
   * provider (each operator start) asks again. Only successful answers are kept.
   */
  private async forwardCached(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    region: string,
    body: string,
  ): Promise<void> {
    const key = `${region} ${body}`;
    let hit = this.staticAnswers.get(key);
    if (!hit) {
      const out = await this.upstream(req, body);
      if (out.status !== 200) {
        res.writeHead(out.status, out.headers).end(out.body);
        return;
      }
      hit = out;
      this.staticAnswers.set(key, hit);
    }
    res.writeHead(hit.status, hit.headers).end(hit.body);
  }

  /** Forwards a request to moto with `body` (possibly rewritten) and returns moto's answer as is. */
  private async forward(req: http.IncomingMessage, res: http.ServerResponse, body: string): Promise<void> {
    const out = await this.upstream(req, body);
    res.writeHead(out.status, out.headers).end(out.body);
  }

  private async upstream(
    req: http.IncomingMessage,
    body: string,
  ): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined || k === 'host' || k === 'content-length' || k === 'connection') continue;
      if (k === 'expect' || k === 'transfer-encoding') continue;
      headers[k] = Array.isArray(v) ? v.join(', ') : v;
    }
    const r = await fetch(`${this.opts.upstream}${req.url ?? '/'}`, {
      method: req.method ?? 'POST',
      headers,
      ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body }),
    });
    const text = await r.text();
    const outHeaders: Record<string, string> = {};
    r.headers.forEach((v, k) => {
      if (
        k !== 'content-length' &&
        k !== 'content-encoding' &&
        k !== 'transfer-encoding' &&
        k !== 'connection'
      )
        outHeaders[k] = v;
    });
    return { status: r.status, headers: outHeaders, body: text };
  }

  private ec2Error(res: http.ServerResponse, status: number, code: string, message: string): void {
    res
      .writeHead(status, { 'content-type': 'text/xml' })
      .end(
        `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>${code}</Code><Message>${xmlEscape(
          message,
        )}</Message></Error></Errors><RequestID>${randomUUID()}</RequestID></Response>`,
      );
  }

  private async zoneOfSubnet(region: string, subnetId: string): Promise<string> {
    let z = this.subnetZones.get(subnetId);
    if (z) return z;
    const out = await this.ec2(region).send(new DescribeSubnetsCommand({ SubnetIds: [subnetId] }));
    z = out.Subnets?.[0]?.AvailabilityZone ?? '';
    this.subnetZones.set(subnetId, z);
    return z;
  }

  private async regionZones(region: string): Promise<string[]> {
    let zones = this.zonesByRegion.get(region);
    if (!zones) {
      const out = await this.ec2(region).send(new DescribeAvailabilityZonesCommand({}));
      zones = (out.AvailabilityZones ?? []).map((z) => z.ZoneName!).sort();
      this.zonesByRegion.set(region, zones);
    }
    return zones;
  }

  private takeFault(o: Override, capacityType: string): CapacityFault | undefined {
    const type = o.fields.InstanceType;
    const f = this.faults.find(
      (x) =>
        (x.instanceType === undefined || x.instanceType === type) &&
        (x.zone === undefined || x.zone === o.zone) &&
        (x.capacityType === undefined || x.capacityType === capacityType) &&
        (x.times === undefined || x.times > 0),
    );
    if (f && f.times !== undefined) f.times--;
    if (f) this.capacityErrorsInjected++;
    return f;
  }

  /**
   * The fleet's overrides with their zone (given, or the subnet's) and price (spot or on-demand, unknown =
   * infinite), in the order the allocation strategy tries them: by `Priority` for the prioritized strategies,
   * else cheapest first.
   */
  private async orderedOverrides(
    region: string,
    form: URLSearchParams,
    capacityType: string,
    strategy: string,
  ): Promise<Override[]> {
    const table = this.prices(region);
    const overrides = parseOverrides(form);
    for (const o of overrides) {
      o.zone =
        o.fields.AvailabilityZone ??
        (o.fields.SubnetId ? await this.zoneOfSubnet(region, o.fields.SubnetId) : '');
      const type = o.fields.InstanceType ?? '';
      const p = capacityType === 'spot' ? spotPrice(table, type, o.zone) : table.onDemand.get(type);
      o.price = p ?? Number.POSITIVE_INFINITY;
    }
    if (strategy === 'prioritized' || strategy === 'capacity-optimized-prioritized') {
      overrides.sort((a, b) => Number(a.fields.Priority ?? 0) - Number(b.fields.Priority ?? 0));
    } else {
      overrides.sort((a, b) => a.price - b.price);
    }
    return overrides;
  }

  /**
   * CreateFleet: tries the overrides in allocation-strategy order, each injected capacity fault an error item;
   * the first without one is sent to moto alone (one config, one override). Its launch template's security
   * groups and instance profile are applied to the instances, the error items added to moto's answer, and a
   * reply may be lost on purpose (`repliesToLose`: a 500 after the launch). No override left: only the errors.
   */
  private async createFleet(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    region: string,
    form: URLSearchParams,
  ): Promise<void> {
    const capacityType = form.get('TargetCapacitySpecification.DefaultTargetCapacityType') ?? 'on-demand';
    const strategy =
      (capacityType === 'spot'
        ? form.get('SpotOptions.AllocationStrategy')
        : form.get('OnDemandOptions.AllocationStrategy')) ??
      (capacityType === 'spot' ? 'price-capacity-optimized' : 'lowest-price');
    const overrides = await this.orderedOverrides(region, form, capacityType, strategy);
    const errors: Array<{ o: Override; code: string; message?: string }> = [];
    let chosen: Override | undefined;
    let reservation: EmulatedReservation | undefined;
    for (const o of overrides) {
      const ltSpec = launchTemplateSpecOf(form, o.config);
      const target = await this.templateTarget(region, ltSpec);
      const placement = (await this.templateData(region, ltSpec))?.Placement;
      if (this.placementGroups.spreadLimitReached(region, placement, o.zone)) {
        errors.push({ o, code: 'InsufficientInstanceCapacity', message: SPREAD_LIMIT_MESSAGE });
        continue;
      }
      if (target) {
        const check = this.reservations.checkLaunch(target, o.fields.InstanceType ?? '', o.zone);
        if (!check.ok) {
          errors.push({ o, code: check.code });
          continue;
        }
        reservation = check.reservation;
      }
      const f = this.takeFault(o, capacityType);
      if (f) {
        errors.push({ o, code: f.code ?? 'InsufficientInstanceCapacity' });
        reservation = undefined;
        continue;
      }
      chosen = o;
      if (reservation) this.reservations.take(reservation);
      break;
    }
    const errorXml = fleetErrorXml(errors, form, capacityType);
    if (!chosen) {
      res
        .writeHead(200, { 'content-type': 'text/xml' })
        .end(
          `<?xml version="1.0" encoding="UTF-8"?><CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">` +
            `<requestId>${randomUUID()}</requestId><fleetId>fleet-${randomUUID()}</fleetId>` +
            `<errorSet>${errorXml}</errorSet><fleetInstanceSet/></CreateFleetResponse>`,
        );
      return;
    }
    const spec = launchTemplateSpecOf(form, chosen.config);
    const forwarded = singleOverrideForm(form, spec, chosen);
    // moto knows only spot and on-demand fleets: a capacity block launches as on-demand in it
    if (capacityType === 'capacity-block')
      forwarded.set('TargetCapacitySpecification.DefaultTargetCapacityType', 'on-demand');
    const out = await this.upstream(req, forwarded.toString()).catch((err: unknown) => {
      if (reservation) this.reservations.release(reservation);
      throw err;
    });
    let text = out.body;
    if (out.status !== 200 && reservation) this.reservations.release(reservation);
    if (out.status === 200) {
      const ids = [...text.matchAll(/<item>(i-[0-9a-zA-Z]+)<\/item>/g)].map((m) => m[1]!);
      if (reservation && ids.length > 0) this.reservations.launched(reservation, ids);
      else if (reservation) this.reservations.release(reservation);
      await this.applyTemplate(region, spec, ids, chosen.zone);
      if (ids.length > 0 && this.repliesToLose > 0) {
        // launched, but the caller hears a retryable server error (its SDK retries and launches again)
        this.repliesToLose--;
        this.lostFleetReplies++;
        this.onFleetReplyLost?.(ids);
        return this.ec2Error(res, 500, 'InternalError', 'An internal error has occurred');
      }
      if (errorXml) text = withFleetErrors(text, errorXml);
    }
    res.writeHead(out.status, out.headers).end(text);
  }

  /**
   * Applies the launch template's security groups, instance profile and metadata options to fleet instances (moto
   * ignores them), and remembers them as dedicated when the template's `Placement.Tenancy` is `dedicated` and as
   * monitored when its `Monitoring.Enabled` is true, and places them in the template's `Placement` group.
   */
  private async applyTemplate(
    region: string,
    spec: Record<string, string>,
    instanceIds: string[],
    zone: string,
  ): Promise<void> {
    if (instanceIds.length === 0) return;
    const ec2 = this.ec2(region);
    try {
      const versions = await ec2.send(
        new DescribeLaunchTemplateVersionsCommand({
          ...(spec.LaunchTemplateId
            ? { LaunchTemplateId: spec.LaunchTemplateId }
            : { LaunchTemplateName: spec.LaunchTemplateName }),
          Versions: [spec.Version ?? '$Default'],
        }),
      );
      const data = versions.LaunchTemplateVersions?.[0]?.LaunchTemplateData;
      const groups = [
        ...(data?.SecurityGroupIds ?? []),
        ...(data?.NetworkInterfaces?.flatMap((n) => n.Groups ?? []) ?? []),
      ];
      const profile = data?.IamInstanceProfile;
      if (data?.Placement?.Tenancy === 'dedicated')
        for (const id of instanceIds) this.dedicatedInstances.add(id);
      if (data?.Monitoring?.Enabled) for (const id of instanceIds) this.monitoredInstances.add(id);
      this.placementGroups.place(region, data?.Placement, instanceIds, zone);
      const md = data?.MetadataOptions;
      await Promise.all(
        instanceIds.map(async (id) => {
          if (groups.length > 0) {
            await ec2.send(new ModifyInstanceAttributeCommand({ InstanceId: id, Groups: groups }));
          }
          if (md) {
            await ec2.send(
              new ModifyInstanceMetadataOptionsCommand({
                InstanceId: id,
                ...(md.HttpTokens ? { HttpTokens: md.HttpTokens } : {}),
                ...(md.HttpPutResponseHopLimit !== undefined
                  ? { HttpPutResponseHopLimit: md.HttpPutResponseHopLimit }
                  : {}),
                ...(md.HttpEndpoint ? { HttpEndpoint: md.HttpEndpoint } : {}),
                ...(md.HttpProtocolIpv6 ? { HttpProtocolIpv6: md.HttpProtocolIpv6 } : {}),
                ...(md.InstanceMetadataTags ? { InstanceMetadataTags: md.InstanceMetadataTags } : {}),
              }),
            );
          }
          if (profile?.Name || profile?.Arn) {
            await ec2
              .send(
                new AssociateIamInstanceProfileCommand({
                  InstanceId: id,
                  IamInstanceProfile: profile.Arn ? { Arn: profile.Arn } : { Name: profile.Name },
                }),
              )
              .catch((err: unknown) => this.opts.onError?.(err, `associating instance profile with ${id}`));
          }
        }),
      );
    } catch (err) {
      this.opts.onError?.(
        err,
        `applying launch template ${spec.LaunchTemplateId ?? spec.LaunchTemplateName}`,
      );
    }
  }

  private async spotPriceHistory(
    res: http.ServerResponse,
    region: string,
    form: URLSearchParams,
  ): Promise<void> {
    const table = this.prices(region);
    const types = new Set<string>();
    let zoneFilter: string[] = [];
    for (const [k, v] of form) {
      if (/^InstanceType\.\d+$/.test(k)) types.add(v);
      if (k === 'AvailabilityZone') zoneFilter.push(v);
    }
    for (const [k, v] of form) {
      const m = /^Filter\.(\d+)\.Name$/.exec(k);
      if (m && v === 'availability-zone') {
        for (const [k2, v2] of form) if (k2.startsWith(`Filter.${m[1]}.Value.`)) zoneFilter.push(v2);
      }
    }
    const zones = zoneFilter.length > 0 ? zoneFilter : await this.regionZones(region);
    zoneFilter = [];
    const names =
      types.size > 0 ? [...types] : [...new Set([...table.spot.keys()].map((k) => k.split('/')[0]!))].sort();
    const items: string[] = [];
    const now = new Date().toISOString();
    for (const t of names) {
      for (const z of zones) {
        const p = spotPrice(table, t, z);
        if (p === undefined) continue;
        items.push(
          `<item><availabilityZone>${z}</availabilityZone><instanceType>${t}</instanceType>` +
            `<productDescription>Linux/UNIX</productDescription><spotPrice>${p.toFixed(6)}</spotPrice>` +
            `<timestamp>${now}</timestamp></item>`,
        );
      }
    }
    const max = Math.min(Number(form.get('MaxResults') ?? 1000) || 1000, 1000);
    const start = Number(form.get('NextToken') ?? 0) || 0;
    const page = items.slice(start, start + max);
    const next = start + max < items.length ? `<nextToken>${start + max}</nextToken>` : '';
    res
      .writeHead(200, { 'content-type': 'text/xml' })
      .end(
        `<?xml version="1.0" encoding="UTF-8"?><DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">` +
          `<requestId>${randomUUID()}</requestId><spotPriceHistorySet>${page.join('')}</spotPriceHistorySet>${next}` +
          `</DescribeSpotPriceHistoryResponse>`,
      );
  }

  private async describeLaunchTemplates(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    form: URLSearchParams,
  ): Promise<void> {
    const max = Number(form.get('MaxResults') ?? 0) || 0;
    const start = Number(form.get('NextToken') ?? 0) || 0;
    const all = new URLSearchParams(form);
    all.set('MaxResults', '1000000');
    all.delete('NextToken');
    const out = await this.upstream(req, all.toString());
    if (out.status !== 200 || max === 0) {
      // No MaxResults: AWS returns everything (moto would cut at 15).
      res.writeHead(out.status, out.headers).end(out.body);
      return;
    }
    const m = /<launchTemplates>([\s\S]*)<\/launchTemplates>/.exec(out.body);
    const items = m ? topLevelItems(m[1]!) : [];
    const page = items.slice(start, start + max);
    const next = start + max < items.length ? `<nextToken>${start + max}</nextToken>` : '';
    const body = m
      ? out.body.replace(m[0], `<launchTemplates>${page.join('')}</launchTemplates>${next}`)
      : out.body;
    res.writeHead(200, out.headers).end(body);
  }

  /** The image moto has for each architecture in `region` (newest Amazon Linux 2023 image per architecture). */
  private images(region: string): Promise<Record<string, string>> {
    let p = this.imagesByRegion.get(region);
    if (!p) {
      p = (async () => {
        const out = await this.ec2(region).send(new DescribeImagesCommand({ Owners: ['amazon'] }));
        const byArch: Record<string, { id: string; name: string }> = {};
        for (const img of out.Images ?? []) {
          const arch = img.Architecture ?? 'x86_64';
          const name = img.Name ?? '';
          const cur = byArch[arch];
          const score = (n: string): number => (n.startsWith('al2023') ? 2 : n.includes('eks') ? 1 : 0);
          if (!cur || score(name) > score(cur.name) || (score(name) === score(cur.name) && name > cur.name)) {
            byArch[arch] = { id: img.ImageId!, name };
          }
        }
        const windows = (out.Images ?? []).find((i) => (i.Name ?? '').includes('EKS_Optimized'))?.ImageId;
        return {
          x86_64: byArch.x86_64?.id ?? '',
          arm64: byArch.arm64?.id ?? byArch.x86_64?.id ?? '',
          windows: windows ?? byArch.x86_64?.id ?? '',
        };
      })();
      p.catch(() => this.imagesByRegion.delete(region));
      this.imagesByRegion.set(region, p);
    }
    return p;
  }

  /** The value the proxy serves for SSM parameter `name`, or undefined when moto should answer. */
  private async ssmValue(region: string, name: string): Promise<string | undefined> {
    const fixed = this.publishedParameters.get(name) ?? this.opts.ssmParameters?.[name];
    if (fixed !== undefined) return fixed;
    const isWindows = name.startsWith('/aws/service/ami-windows-latest/') && name.includes('EKS_Optimized');
    if (
      !name.startsWith('/aws/service/eks/') &&
      !name.startsWith('/aws/service/bottlerocket/') &&
      !isWindows
    ) {
      return undefined;
    }
    const imgs = await this.images(region);
    if (isWindows) return imgs.windows;
    return /arm64/.test(name) ? imgs.arm64 : imgs.x86_64;
  }

  private async ssm(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    region: string,
    action: 'GetParameter' | 'GetParameters',
    body: string,
  ): Promise<boolean> {
    const input = JSON.parse(body || '{}') as { Name?: string; Names?: string[] };
    const param = (name: string, value: string): Record<string, unknown> => ({
      Name: name,
      Type: 'String',
      Value: value,
      Version: 1,
      DataType: name.endsWith('image_id') ? 'aws:ec2:image' : 'text',
      LastModifiedDate: Math.floor(Date.now() / 1000),
      ARN: `arn:aws:ssm:${region}::parameter${name}`,
    });
    const send = (v: unknown): void => {
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(v));
    };
    if (action === 'GetParameter') {
      const value = await this.ssmValue(region, input.Name ?? '');
      if (value === undefined) return false;
      send({ Parameter: param(input.Name!, value) });
      return true;
    }
    const served: Record<string, unknown>[] = [];
    const rest: string[] = [];
    for (const n of input.Names ?? []) {
      const v = await this.ssmValue(region, n);
      if (v === undefined) rest.push(n);
      else served.push(param(n, v));
    }
    if (served.length === 0) return false;
    let parameters = served;
    let invalid: string[] = [];
    if (rest.length > 0) {
      const out = await this.upstream(req, JSON.stringify({ ...input, Names: rest }));
      const parsed = JSON.parse(out.body) as {
        Parameters?: Record<string, unknown>[];
        InvalidParameters?: string[];
      };
      parameters = [...served, ...(parsed.Parameters ?? [])];
      invalid = parsed.InvalidParameters ?? rest;
    }
    send({ Parameters: parameters, InvalidParameters: invalid });
    return true;
  }

  private getProducts(res: http.ServerResponse, region: string, body: string): void {
    const input = JSON.parse(body || '{}') as {
      ServiceCode?: string;
      Filters?: Array<{ Field: string; Value: string }>;
      MaxResults?: number;
      NextToken?: string;
    };
    const wanted = input.Filters?.find((f) => f.Field === 'regionCode')?.Value ?? region;
    const typeFilter = input.Filters?.find((f) => f.Field === 'instanceType')?.Value;
    const table = this.prices(wanted);
    const entries = [...table.onDemand.entries()]
      .filter(([t]) => typeFilter === undefined || t === typeFilter)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    const max = input.MaxResults ?? 100;
    const start = Number(input.NextToken ?? 0) || 0;
    const page = entries.slice(start, start + max).map(([t, price]) => {
      const sku = `SKU${Buffer.from(t).toString('hex').toUpperCase()}`;
      return JSON.stringify({
        product: {
          productFamily: 'Compute Instance',
          attributes: {
            instanceType: t,
            regionCode: wanted,
            operatingSystem: 'Linux',
            tenancy: 'Shared',
            preInstalledSw: 'NA',
            capacitystatus: 'Used',
            marketoption: 'OnDemand',
          },
          sku,
        },
        serviceCode: 'AmazonEC2',
        terms: {
          OnDemand: {
            [`${sku}.JRTCKXETXF`]: {
              priceDimensions: {
                [`${sku}.JRTCKXETXF.6YS6EN2CT7`]: {
                  unit: 'Hrs',
                  pricePerUnit: { USD: price.toFixed(10) },
                  description: `$${price} per On Demand Linux ${t} Instance Hour`,
                },
              },
              sku,
              offerTermCode: 'JRTCKXETXF',
            },
          },
        },
      });
    });
    const out: Record<string, unknown> = { FormatVersion: 'aws_v1', PriceList: page };
    if (start + max < entries.length) out.NextToken = String(start + max);
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(out));
  }
}
