/**
 * One log line per request, with counts only: method, route, status, duration, problem code,
 * number of inputs and tokens. Bodies and input text are never logged (clinical data).
 */
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/** What a handler learned about a request that is safe to log. */
export interface RequestOutcome {
  code?: string;
  inputs?: number;
  tokens?: number;
}

const outcomes = new WeakMap<FastifyRequest, RequestOutcome>();

/** Adds safe facts (counts, problem code) to the request's log line. */
export function noteOutcome(request: FastifyRequest, facts: RequestOutcome): void {
  outcomes.set(request, { ...outcomes.get(request), ...facts });
}

/** The safe facts noted for `request` so far (metrics read them when it completes). */
export function outcomeOf(request: FastifyRequest): RequestOutcome {
  return outcomes.get(request) ?? {};
}

/** Whether a finished request is left out of the log (a successful probe, say); errors never are. */
export type QuietRequest = (request: FastifyRequest, reply: FastifyReply) => boolean;

/**
 * Replaces Fastify's request lines (which carry the raw URL) with one line per request at
 * completion, holding only the safe facts above; requests `quiet` names get none.
 */
export class CountsOnlyLogController extends LogController {
  constructor(private readonly quiet: QuietRequest = () => false) {
    super({ requestIdLogLabel: 'requestId' });
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    if (!error && this.quiet(request, reply)) return;
    const line = {
      method: request.method,
      // The matched route template, not the raw URL: a query string could carry anything.
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      ...outcomes.get(request),
    };
    if (error) request.log.error({ ...line, err: { type: error.name } }, 'request failed');
    else request.log.info(line, 'request completed');
  }
}

/** Pino serializers that keep raw requests and responses out of the logs. */
export const safeSerializers = {
  req: (req: { method?: string }) => ({ method: req.method }),
  res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
};
