import { describe, expect, it } from 'vitest';
import {
  formatResource,
  parseQuantity,
  parseResource,
  parseResources,
  QuantityParseError,
} from './quantity.ts';

describe('quantity', () => {
  it('parses decimal, binary and exponent suffixes', () => {
    expect(parseQuantity('100m')).toBeCloseTo(0.1);
    expect(parseQuantity('1Gi')).toBe(1073741824);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(parseQuantity('1.5')).toBe(1.5);
    expect(parseQuantity(2)).toBe(2);
  });
  it('parses resources into internal units', () => {
    expect(parseResource('cpu', '1930m')).toBe(1930);
    expect(parseResource('cpu', '1.5')).toBe(1500);
    expect(parseResource('cpu', 2)).toBe(2000);
    expect(parseResource('memory', '6903Mi')).toBe(6903 * 1024 * 1024);
    expect(parseResources({ pods: '29', 'nvidia.com/gpu': 1 })).toEqual({ pods: 29, 'nvidia.com/gpu': 1 });
  });
  it('formats as kubectl prints', () => {
    expect(formatResource('cpu', 1930)).toBe('1930m');
    expect(formatResource('cpu', 2000)).toBe('2');
    expect(formatResource('memory', 6903 * 1024 * 1024)).toBe('6903Mi');
    expect(formatResource('ephemeral-storage', 17 * 1024 ** 3)).toBe('17Gi');
    expect(formatResource('pods', 29)).toBe('29');
  });
  it('rejects garbage with a clear error', () => {
    expect(() => parseQuantity('lots')).toThrow(QuantityParseError);
    expect(() => parseResources({ cpu: 'one' })).toThrow('cpu: one');
  });
});
