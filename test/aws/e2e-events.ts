/**
 * EventBridge → SQS wiring in moto for the interruption tests, the way the upstream CloudFormation template
 * sets it up (rules for the four EC2/Health event kinds, target the interruption queue). EventBridge is called
 * with plain JSON-1.1 requests (no SDK client for it in the project); moto does not check signatures, so the
 * Authorization header only names the service and region.
 */
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { MotoServer } from './moto.ts';

/** Calls one EventBridge action on moto. @throws Error with moto's reply on a non-2xx status. */
export async function eventBridge(moto: MotoServer, action: string, body: unknown): Promise<unknown> {
  const res = await fetch(moto.endpoint, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-amz-json-1.1',
      'X-Amz-Target': `AWSEvents.${action}`,
      Authorization: `AWS4-HMAC-SHA256 Credential=testing/20260101/${moto.region}/events/aws4_request, SignedHeaders=host, Signature=0`,
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`EventBridge ${action}: HTTP ${res.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

/**
 * Creates the SQS queue `name` and the EventBridge rule that sends EC2 spot interruption, rebalance, state-change
 * and AWS Health events to it. Returns the queue URL.
 */
export async function interruptionQueue(moto: MotoServer, name: string): Promise<string> {
  const sqs = new SQSClient(moto.clientConfig);
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl as string;
  const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] })))
    .Attributes?.QueueArn as string;
  await eventBridge(moto, 'PutRule', {
    Name: `${name}-rule`,
    EventPattern: JSON.stringify({ source: ['aws.ec2', 'aws.health'] }),
    State: 'ENABLED',
  });
  await eventBridge(moto, 'PutTargets', { Rule: `${name}-rule`, Targets: [{ Id: '1', Arn: arn }] });
  sqs.destroy();
  return url;
}

/** Puts one event on the default bus (as EC2 or AWS Health would). */
export async function putEvent(
  moto: MotoServer,
  source: 'aws.ec2' | 'aws.health',
  detailType: string,
  detail: unknown,
): Promise<void> {
  const out = (await eventBridge(moto, 'PutEvents', {
    Entries: [{ Source: source, DetailType: detailType, Detail: JSON.stringify(detail), Resources: [] }],
  })) as { FailedEntryCount?: number };
  if (out.FailedEntryCount) throw new Error(`PutEvents failed: ${JSON.stringify(out)}`);
}

/** Spot interruption warning for `instanceID` (the message EC2 sends two minutes before reclaiming it). */
export function spotInterruption(moto: MotoServer, instanceID: string): Promise<void> {
  return putEvent(moto, 'aws.ec2', 'EC2 Spot Instance Interruption Warning', {
    'instance-id': instanceID,
    'instance-action': 'terminate',
  });
}
