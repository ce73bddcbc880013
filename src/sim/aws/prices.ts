/**
 * The price table the AWS emulator proxy serves (Pricing API `GetProducts`, EC2 `DescribeSpotPriceHistory`) and
 * orders CreateFleet overrides by. Default: capenter's embedded catalog (us-east-1 Linux on-demand prices, spot =
 * on-demand × (1 − Spot Advisor savings) of the region), so a provider reading prices from the emulated APIs sees
 * the same numbers as the kwok provider and `capenter simulate`.
 */
import { getInstanceTypes, isSupportedRegion } from '../../cloudprovider/aws/catalog/index.ts';

/** USD/hour prices by instance type; spot optionally per zone (`<type>/<zone>` wins over `<type>`). */
export interface PriceTable {
  /** Linux on-demand USD/hour by instance type. */
  onDemand: Map<string, number>;
  /** Spot USD/hour by instance type (all zones) or by `<type>/<zone>`. */
  spot: Map<string, number>;
}

/**
 * The embedded catalog's prices for `region` (us-east-1's table when the region is not embedded): on-demand from
 * the price list, spot from the Spot Advisor estimate (types without an estimate have no spot price).
 */
export function defaultPriceTable(region: string): PriceTable {
  const r = isSupportedRegion(region) ? region : 'us-east-1';
  const onDemand = new Map<string, number>();
  const spot = new Map<string, number>();
  for (const it of getInstanceTypes({ region: r }).instanceTypes) {
    for (const o of it.offerings) {
      if (o.capacityType === 'on-demand') onDemand.set(it.name, o.priceUSDPerHour);
      else if (o.capacityType === 'spot') spot.set(it.name, o.priceUSDPerHour);
    }
  }
  return { onDemand, spot };
}

/** Spot USD/hour of `instanceType` in `zone` in `table`, or undefined. */
export function spotPrice(table: PriceTable, instanceType: string, zone: string): number | undefined {
  return table.spot.get(`${instanceType}/${zone}`) ?? table.spot.get(instanceType);
}
