import { describeCloudProviderConformance } from '../conformance/suite.ts';
import { kwokConformanceContext } from './testing.ts';

describeCloudProviderConformance('kwok', async () => kwokConformanceContext());
