import { describe, expect, it } from 'vitest';
import { actionFor, instanceIDOf, MessageParseError, notificationFor, parseMessage } from './messages.ts';

const event = (source: string, detailType: string, detail: unknown) =>
  JSON.stringify({
    version: '0',
    id: 'e1',
    source,
    'detail-type': detailType,
    time: '2026-01-01T00:00:00Z',
    detail,
  });

describe('interruption messages (upstream parsers)', () => {
  it('an interruptible capacity reservation warning is capacity_reservation_interrupted, CordonAndDrain', () => {
    const m = parseMessage(
      event('aws.ec2', 'EC2 Capacity Reservation Instance Interruption Warning', {
        'instance-id': 'i-9',
        'instance-action': 'terminate',
      }),
    );
    expect([m.kind, m.instanceIDs, actionFor(m.kind)]).toEqual([
      'capacity_reservation_interrupted',
      ['i-9'],
      'CordonAndDrain',
    ]);
  });
  it('recognises the kinds by version, source and detail-type', () => {
    expect(
      parseMessage(event('aws.ec2', 'EC2 Spot Instance Interruption Warning', { 'instance-id': 'i-1' })),
    ).toEqual({
      kind: 'spot_interrupted',
      instanceIDs: ['i-1'],
      id: 'e1',
      detailType: 'EC2 Spot Instance Interruption Warning',
      time: Date.parse('2026-01-01T00:00:00Z'),
    });
    const state = (s: string) =>
      parseMessage(
        event('aws.ec2', 'EC2 Instance State-change Notification', { 'instance-id': 'i-2', state: s }),
      ).kind;
    expect([
      state('stopping'),
      state('Stopped'),
      state('shutting-down'),
      state('terminated'),
      state('pending'),
    ]).toEqual([
      'instance_stopped',
      'instance_stopped',
      'instance_terminated',
      'instance_terminated',
      'no_op',
    ]);
    expect(
      parseMessage(
        event('aws.health', 'AWS Health Event', { service: 'RDS', eventTypeCategory: 'scheduledChange' }),
      ).kind,
    ).toBe('no_op');
    expect(parseMessage(JSON.stringify({ version: '1', source: 'aws.ec2' })).kind).toBe('no_op');
    expect(parseMessage('').kind).toBe('no_op');
  });

  it('a body that is not JSON, or a spot warning without instance-id, is a parse error', () => {
    expect(() => parseMessage('nope')).toThrow(MessageParseError);
    expect(() => parseMessage(event('aws.ec2', 'EC2 Spot Instance Interruption Warning', {}))).toThrow(
      /instance-id/,
    );
  });

  it('actions and provider IDs', () => {
    expect(actionFor('rebalance_recommendation')).toBe('NoAction');
    expect(actionFor('scheduled_change')).toBe('CordonAndDrain');
    // DescribeInstanceStatus kinds (upstream actionForMessage): failed checks are forceful, scheduled events drain
    expect(actionFor('instance_status')).toBe('ForcefulTermination');
    expect(actionFor('system_status')).toBe('ForcefulTermination');
    expect(actionFor('event_status')).toBe('CordonAndDrain');
    expect(notificationFor('system_status')?.reason).toBe('InstanceUnhealthy');
    expect(instanceIDOf('aws:///us-west-2a/i-0abc123')).toBe('i-0abc123');
    expect(instanceIDOf('kwok://x')).toBeUndefined();
  });
});
