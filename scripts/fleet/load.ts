/**
 * The fleet's clients: a steady, bounded load through both gateways with real keys of several
 * organizations, and a share of requests with a bogus key that must never get a 200. Like a
 * front load balancer, a client sends a request to the other gateway only when the first one
 * refused the connection (nothing reached it, so nothing was checked, counted or embedded).
 */
import { Agent, request } from 'node:https';
import { randomBytes } from 'node:crypto';

/** One gateway as the client reaches it. */
export interface GatewayTarget {
  readonly name: string;
  readonly address: string;
  readonly port: number;
}

/** The outcome of one request. */
export interface Outcome {
  readonly id: string;
  readonly org: string;
  readonly status: number;
  readonly retryAfter?: string;
  readonly tokens: number;
  /** When the request was sent and when its answer came (ms since the epoch). */
  readonly sentAt: number;
  readonly at: number;
  readonly bogus: boolean;
  readonly rerouted: boolean;
  /** The problem code of a non-200 (or the client error), to tell who failed. */
  readonly error?: string;
}

export interface LoadOptions {
  readonly gateways: readonly GatewayTarget[];
  readonly ca: Buffer;
  readonly modelId: string;
  /** Organization name → API key. */
  readonly keys: Readonly<Record<string, string>>;
  readonly ratePerS: number;
  readonly maxInFlight: number;
  /** Request ids start with this (one prefix per scenario). */
  readonly idPrefix: string;
  /** Every n-th request carries a key that does not exist (0: none). */
  readonly bogusEvery: number;
}

/**
 * The organizations of the steady load. On a Redis Cluster their hash slots (`{org-a}` 510,
 * `{org-c}` 8636, `{org-b}` 12701) fall on the three primaries `redis-cli --cluster create` makes.
 */
export const LOAD_ORGS = ['org-a', 'org-b', 'org-c'] as const;

const REFUSED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH']);

/** A client for the gateways: keep-alive connections per gateway, TLS checked against the fleet's CA. */
export class GatewayClient {
  private readonly agents = new Map<string, Agent>();
  private next = 0;

  constructor(
    private readonly gateways: readonly GatewayTarget[],
    private readonly ca: Buffer,
  ) {}

  /** Sends one embedding request; on a refused connection, once more to the next gateway. */
  async embed(
    id: string,
    key: string,
    body: string,
  ): Promise<{ status: number; retryAfter?: string; tokens: number; rerouted: boolean; error?: string }> {
    const first = this.gateways[this.next++ % this.gateways.length] as GatewayTarget;
    const once = await this.send(first, id, key, body);
    if (!once.refused) return { ...once, rerouted: false };
    const other = this.gateways.find((g) => g !== first) ?? first;
    return { ...(await this.send(other, id, key, body)), rerouted: true };
  }

  private agent(g: GatewayTarget): Agent {
    let agent = this.agents.get(g.name);
    if (!agent) {
      agent = new Agent({ keepAlive: true, maxSockets: 16, ca: this.ca, servername: 'localhost' });
      this.agents.set(g.name, agent);
    }
    return agent;
  }

  private send(g: GatewayTarget, id: string, key: string, body: string) {
    return new Promise<{ status: number; retryAfter?: string; tokens: number; refused: boolean; error?: string }>((resolve) => {
      const req = request(
        {
          host: g.address,
          port: g.port,
          path: '/v1/embeddings',
          method: 'POST',
          agent: this.agent(g),
          servername: 'localhost',
          timeout: 60_000,
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${key}`,
            'x-request-id': id,
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const retryAfter = res.headers['retry-after'];
            let tokens = 0;
            let code: string | undefined;
            try {
              const parsed = JSON.parse(Buffer.concat(chunks).toString()) as { usage?: { total_tokens?: number }; code?: string };
              if (res.statusCode === 200) tokens = Number(parsed.usage?.total_tokens ?? 0);
              else code = parsed.code;
            } catch {
              code = 'unparsable body';
            }
            resolve({
              status: res.statusCode ?? 0,
              tokens,
              refused: false,
              ...(typeof retryAfter === 'string' ? { retryAfter } : {}),
              ...(code ? { error: code } : {}),
            });
          });
          res.on('error', (e) => resolve({ status: 0, tokens: 0, refused: false, error: e.message }));
        },
      );
      req.on('timeout', () => req.destroy(new Error('client timeout')));
      req.on('error', (e: NodeJS.ErrnoException) => {
        // A reused keep-alive socket the gateway closed as we wrote: nothing was read, so resend it.
        const refused = REFUSED.has(e.code ?? '') || (e.code === 'ECONNRESET' && req.reusedSocket);
        resolve({ status: 0, tokens: 0, refused, error: e.code ?? e.message });
      });
      req.end(body);
    });
  }

  /** Closes the keep-alive connections. */
  close(): void {
    for (const a of this.agents.values()) a.destroy();
  }
}

/** Runs load until `stop()`; resolves with every outcome once the in-flight requests are done. */
export function startLoad(options: LoadOptions): { stop: () => Promise<Outcome[]>; outcomes: Outcome[] } {
  const client = new GatewayClient(options.gateways, options.ca);
  const outcomes: Outcome[] = [];
  const inFlight = new Set<Promise<void>>();
  const orgs = Object.keys(options.keys);
  let n = 0;
  const body = JSON.stringify({ model: options.modelId, input: ['Afebrile overnight, tolerating diet.'] });
  const tick = () => {
    if (inFlight.size >= options.maxInFlight) return; // bounded: a slow fleet gets fewer requests, not a queue
    const i = n++;
    const bogus = options.bogusEvery > 0 && i % options.bogusEvery === options.bogusEvery - 1;
    const org = orgs[i % orgs.length] as string;
    const key = bogus ? `CTG_${randomBytes(16).toString('hex')}` : (options.keys[org] as string);
    const id = `${options.idPrefix}-${i}-${randomBytes(3).toString('hex')}`;
    const sentAt = Date.now();
    const p = client.embed(id, key, body).then((r) => {
      outcomes.push({ id, org, sentAt, at: Date.now(), bogus, ...r });
    });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };
  const timer = setInterval(tick, 1000 / options.ratePerS);
  return {
    outcomes,
    stop: async () => {
      clearInterval(timer);
      await Promise.all(inFlight);
      client.close();
      return outcomes;
    },
  };
}
