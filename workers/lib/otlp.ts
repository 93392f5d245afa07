import { sha256Hex } from './crypto';

/**
 * OpenTelemetry traces in the OTLP/HTTP JSON encoding (the collector's
 * `ExportTraceServiceRequest`: resourceSpans → scopeSpans → spans; ids in hex, times as
 * strings of nanoseconds, 64-bit integers as strings), and the W3C `traceparent` a caller
 * hands in to parent a run's trace.
 */

export type AttributeValue = string | number | boolean;
export type KeyValue = { key: string; value: { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean } };

/** OTLP span kinds and status codes (opentelemetry-proto trace.proto). */
export const SPAN_KIND = { internal: 1, client: 3 } as const;
export const STATUS_CODE = { unset: 0, ok: 1, error: 2 } as const;

export interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: KeyValue[];
  status: { code: number; message?: string };
}

/** A trace's parent as a `traceparent` header names it: version 00, non-zero trace and span ids. */
export interface TraceParent {
  traceId: string;
  spanId: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The parent a `traceparent` value names, or null when it is not one (W3C Trace Context: an invalid header is ignored). */
export function parseTraceparent(value: unknown): TraceParent | null {
  if (typeof value !== 'string' || value.length > 512) return null;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match) return null;
  const [, version, traceId, spanId, , rest] = match;
  // Version ff is invalid; version 00 has nothing after its flags.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (/^0+$/.test(traceId!) || /^0+$/.test(spanId!)) return null;
  return { traceId: traceId!, spanId: spanId! };
}

/** The `traceparent` value naming `parent` (version 00, sampled). */
export const formatTraceparent = (parent: TraceParent) => `00-${parent.traceId}-${parent.spanId}-01`;

/** A `traceparent` value, checked and normalized, or null: what a run keeps of its caller's. */
export const traceparentOf = (value: unknown): string | null => {
  const parent = parseTraceparent(value);
  return parent ? formatTraceparent(parent) : null;
};

/** An id of `hexDigits` derived from `key`: the same span exported again keeps its ids. */
export const derivedId = async (key: string, hexDigits: 16 | 32) => (await sha256Hex(key)).slice(0, hexDigits);

export const nanos = (epochMs: number) => `${BigInt(Math.round(epochMs)) * 1_000_000n}`;

export function attributes(values: Record<string, AttributeValue | null | undefined>): KeyValue[] {
  return Object.entries(values).flatMap(([key, value]): KeyValue[] => {
    if (value === null || value === undefined) return [];
    if (typeof value === 'string') return [{ key, value: { stringValue: value } }];
    if (typeof value === 'boolean') return [{ key, value: { boolValue: value } }];
    return [{ key, value: Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value } }];
  });
}

/** The request body of one export: spans of one resource and one instrumentation scope. */
export function exportRequest(resource: Record<string, AttributeValue>, scope: { name: string; version: string }, spans: Span[]) {
  return { resourceSpans: [{ resource: { attributes: attributes(resource) }, scopeSpans: [{ scope, spans }] }] };
}
