/**
 * The `envoy.service.accesslog.v3.AccessLogService/StreamAccessLogs` handler: Envoy streams
 * its access log here, and every billable entry is recorded once (record-usage.lua writes the
 * stream entry, the daily counters and the token debit atomically). Envoy sends each entry
 * once, so there is no de-duplication; request ids are not unique (clients choose them).
 */
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { StreamAccessLogsMessage__Output } from '../generated/envoy/service/accesslog/v3/StreamAccessLogsMessage.js';
import type { StreamAccessLogsResponse } from '../generated/envoy/service/accesslog/v3/StreamAccessLogsResponse.js';
import { readUsage } from './policy/usage.js';
import type { RedisStore } from './store/redis.js';

export interface UsageDeps {
  readonly store: Pick<RedisStore, 'recordUsage'>;
  readonly defaultTpm: number;
  readonly clock: () => number;
  readonly log: Logger;
}

interface Tally {
  recorded: number;
  incomplete: number;
  failed: number;
}

/** The StreamAccessLogs handler for the gRPC server. */
export function createUsageHandler(deps: UsageDeps): grpc.handleClientStreamingCall<StreamAccessLogsMessage__Output, StreamAccessLogsResponse> {
  return (call, callback) => {
    const pending = new Set<Promise<void>>();
    const tally: Tally = { recorded: 0, incomplete: 0, failed: 0 };
    call.on('data', (message: StreamAccessLogsMessage__Output) => {
      for (const entry of message.http_logs?.log_entry ?? []) {
        const reading = readUsage(entry, deps.clock());
        if (reading.kind === 'incomplete') tally.incomplete += 1;
        if (reading.kind !== 'usage') continue;
        const write = deps.store.recordUsage(reading.usage, deps.defaultTpm).then(
          () => void (tally.recorded += 1),
          () => void (tally.failed += 1),
        );
        pending.add(write);
        void write.finally(() => pending.delete(write));
      }
      if (tally.failed > 0 || tally.incomplete > 0) report(deps.log, tally);
    });
    const finish = (): void => {
      void Promise.all(pending).then(() => {
        report(deps.log, tally);
        callback(null, {});
      });
    };
    call.on('end', finish);
    // A cancelled stream still lets its in-flight writes land; there is nobody to answer.
    call.on('error', () => void Promise.all(pending).then(() => report(deps.log, tally)));
  };
}

// Counts only: an entry's fields never reach a log line.
function report(log: Logger, tally: Tally): void {
  if (tally.failed > 0) log.error({ event: 'usage_record_failed', ...tally }, 'usage entries could not be recorded');
  else if (tally.incomplete > 0) log.warn({ event: 'usage_entries_incomplete', ...tally }, 'usage entries without identity or tokens ignored');
  else log.debug({ event: 'usage_recorded', ...tally }, 'usage recorded');
  tally.failed = 0;
  tally.incomplete = 0;
}
