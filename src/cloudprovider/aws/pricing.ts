/**
 * Prices of the aws provider: Linux on-demand prices from the AWS Pricing API (`GetProducts`), spot prices from EC2
 * `DescribeSpotPriceHistory` (latest price per instance type × zone), refreshed every 12 hours as upstream does, with
 * the embedded catalog as the fallback for whatever the APIs do not give (and for on-demand with `isolatedVPC`,
 * where the Pricing API is unreachable).
 *
 * Upstream: aws/karpenter-provider-aws `pkg/providers/pricing/pricing.go` (filters, 12 h refresh, static fallback,
 * spot fallback to the on-demand price is NOT done: a type without a spot price has no spot offering here, as the
 * embedded catalog does).
 */
import { DescribeSpotPriceHistoryCommand, type EC2Client } from '@aws-sdk/client-ec2';
import { GetProductsCommand, type PricingClient } from '@aws-sdk/client-pricing';
import type { NowClock } from '../offerings.ts';
import type { CapacityType, Offering } from '../types.ts';
import { onDemandPrice, spotPriceEstimate } from './catalog/index.ts';
import { withThrottleRetry } from './retry.ts';

/** A price and where it came from. */
export interface Price {
  priceUSDPerHour: number;
  priceSource: Offering['priceSource'];
}

/** Dependencies of {@link AwsPricing}. */
export interface AwsPricingDeps {
  ec2: EC2Client;
  pricing: PricingClient;
  region: string;
  clock: NowClock;
  /** No Pricing API (upstream `--isolated-vpc`): on-demand prices from the embedded table. */
  isolatedVPC?: boolean;
  /** Seconds between refreshes, default 43200 (12 h, upstream). */
  refreshSeconds?: number;
  onError?: (err: unknown, context: string) => void;
}

/**
 * Parses one Price List document (a `GetProducts` `PriceList` entry) into `[instanceType, USD/hour]`, or undefined
 * when it has no instance type or no positive USD on-demand price.
 */
export function parsePriceListEntry(doc: string): [string, number] | undefined {
  let parsed: {
    product?: { attributes?: { instanceType?: string } };
    terms?: {
      OnDemand?: Record<string, { priceDimensions?: Record<string, { pricePerUnit?: { USD?: string } }> }>;
    };
  };
  try {
    parsed = JSON.parse(doc) as typeof parsed;
  } catch {
    return undefined;
  }
  const type = parsed.product?.attributes?.instanceType;
  if (!type) return undefined;
  for (const term of Object.values(parsed.terms?.OnDemand ?? {})) {
    for (const dim of Object.values(term.priceDimensions ?? {})) {
      const usd = Number(dim.pricePerUnit?.USD);
      if (Number.isFinite(usd) && usd > 0) return [type, usd];
    }
  }
  return undefined;
}

/** On-demand and spot prices of one region. */
export class AwsPricing {
  private onDemand = new Map<string, number>();
  private spot = new Map<string, number>();
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | undefined;
  private gen = 0;

  constructor(private readonly deps: AwsPricingDeps) {}

  /** Bumped on every refresh (instance-type caches compare it). */
  get generation(): number {
    return this.gen;
  }

  /** Number of on-demand and spot prices obtained from the APIs (not the fallback). */
  get counts(): { onDemand: number; spot: number } {
    return { onDemand: this.onDemand.size, spot: this.spot.size };
  }

  /** Refreshes the prices when older than the refresh period (one refresh at a time); never throws. */
  async ensureFresh(): Promise<void> {
    const ttl = (this.deps.refreshSeconds ?? 43_200) * 1000;
    if (this.deps.clock.now() - this.fetchedAt < ttl) return;
    this.loading ??= this.refresh().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  /** Fetches both tables now; a failing API keeps the previous table (or the fallback) and reports via onError. */
  async refresh(): Promise<void> {
    const [od, spot] = await Promise.all([
      this.deps.isolatedVPC
        ? Promise.resolve(undefined)
        : this.fetchOnDemand().catch((err: unknown) => {
            this.deps.onError?.(err, 'Pricing GetProducts failed; using embedded on-demand prices');
            return undefined;
          }),
      this.fetchSpot().catch((err: unknown) => {
        this.deps.onError?.(err, 'DescribeSpotPriceHistory failed; using embedded spot estimates');
        return undefined;
      }),
    ]);
    if (od && od.size > 0) this.onDemand = od;
    if (spot && spot.size > 0) this.spot = spot;
    this.fetchedAt = this.deps.clock.now();
    this.gen++;
  }

  /**
   * The price of `instanceType` in `zone` for `capacityType`, or undefined when none is known (no offering).
   * On-demand: the Pricing API's (`on-demand`), else the embedded table (`on-demand` for us-east-1, else
   * `on-demand-fallback`). Spot: DescribeSpotPriceHistory's (`provider`), else the embedded estimate
   * (`spot-estimate`). `reserved` has no price here.
   */
  price(instanceType: string, zone: string, capacityType: CapacityType): Price | undefined {
    if (capacityType === 'on-demand') {
      const p = this.onDemand.get(instanceType);
      if (p !== undefined) return { priceUSDPerHour: p, priceSource: 'on-demand' };
      return onDemandPrice(instanceType, this.deps.region);
    }
    if (capacityType === 'spot') {
      const p = this.spot.get(`${instanceType}/${zone}`);
      if (p !== undefined) return { priceUSDPerHour: p, priceSource: 'provider' };
      const est = spotPriceEstimate(instanceType, this.deps.region);
      return est ? { priceUSDPerHour: est.priceUSDPerHour, priceSource: 'spot-estimate' } : undefined;
    }
    return undefined;
  }

  private async fetchOnDemand(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    let token: string | undefined;
    do {
      const page = await withThrottleRetry(() =>
        this.deps.pricing.send(
          new GetProductsCommand({
            ServiceCode: 'AmazonEC2',
            Filters: [
              { Type: 'TERM_MATCH', Field: 'regionCode', Value: this.deps.region },
              { Type: 'TERM_MATCH', Field: 'serviceCode', Value: 'AmazonEC2' },
              { Type: 'TERM_MATCH', Field: 'preInstalledSw', Value: 'NA' },
              { Type: 'TERM_MATCH', Field: 'operatingSystem', Value: 'Linux' },
              { Type: 'TERM_MATCH', Field: 'capacitystatus', Value: 'Used' },
              { Type: 'TERM_MATCH', Field: 'marketoption', Value: 'OnDemand' },
              { Type: 'TERM_MATCH', Field: 'tenancy', Value: 'Shared' },
              { Type: 'TERM_MATCH', Field: 'licenseModel', Value: 'No License required' },
            ],
            MaxResults: 100,
            ...(token ? { NextToken: token } : {}),
          }),
        ),
      );
      for (const doc of page.PriceList ?? []) {
        // The SDK hands the documents as strings or LazyJsonString objects (whose toString() is the JSON text).
        const e = parsePriceListEntry(typeof doc === 'string' ? doc : String(doc));
        if (e) out.set(e[0], e[1]);
      }
      token = page.NextToken;
    } while (token);
    return out;
  }

  private async fetchSpot(): Promise<Map<string, number>> {
    const latest = new Map<string, { price: number; at: number }>();
    let token: string | undefined;
    const start = new Date(this.deps.clock.now());
    do {
      const page = await withThrottleRetry(() =>
        this.deps.ec2.send(
          new DescribeSpotPriceHistoryCommand({
            ProductDescriptions: ['Linux/UNIX', 'Linux/UNIX (Amazon VPC)'],
            StartTime: start,
            MaxResults: 1000,
            ...(token ? { NextToken: token } : {}),
          }),
        ),
      );
      for (const h of page.SpotPriceHistory ?? []) {
        if (!h.InstanceType || !h.AvailabilityZone || h.SpotPrice === undefined) continue;
        const price = Number(h.SpotPrice);
        if (!Number.isFinite(price) || price <= 0) continue;
        const key = `${h.InstanceType}/${h.AvailabilityZone}`;
        const at = h.Timestamp?.getTime() ?? 0;
        const cur = latest.get(key);
        if (!cur || at >= cur.at) latest.set(key, { price, at });
      }
      token = page.NextToken || undefined;
    } while (token);
    return new Map([...latest].map(([k, v]) => [k, v.price]));
  }
}
