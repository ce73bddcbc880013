/**
 * The price table the AWS emulator proxy serves (Pricing API `GetProducts`, EC2 `DescribeSpotPriceHistory`) and
 * orders CreateFleet overrides by. Injected (`AwsEmulatorProxyOptions.prices`): capenter's is
 * `src/embedded/rules.ts` `catalogPriceTable`, the embedded catalog (us-east-1 Linux on-demand prices, spot =
 * on-demand × (1 − Spot Advisor savings) of the region), so a provider reading prices from the emulated APIs sees
 * the same numbers as the kwok provider and `capenter simulate`.
 */

/** USD/hour prices by instance type; spot optionally per zone (`<type>/<zone>` wins over `<type>`). */
export interface PriceTable {
  /** Linux on-demand USD/hour by instance type. */
  onDemand: Map<string, number>;
  /** Spot USD/hour by instance type (all zones) or by `<type>/<zone>`. */
  spot: Map<string, number>;
}

/** Spot USD/hour of `instanceType` in `zone` in `table`, or undefined. */
export function spotPrice(table: PriceTable, instanceType: string, zone: string): number | undefined {
  return table.spot.get(`${instanceType}/${zone}`) ?? table.spot.get(instanceType);
}
