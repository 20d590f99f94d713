/**
 * A small HTTPS client for the gateway tests that trusts the stack's own CA, over HTTP/1.1
 * (node:https) or HTTP/2 (node:http2). Node's global fetch cannot take a CA per request, and
 * the tests need raw access to statuses, headers and bodies anyway.
 */
import { request as httpsRequest } from 'node:https';
import { connect as http2Connect, constants as h2 } from 'node:http2';

export interface GatewayRequest {
  readonly method?: string;
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
  /** HTTP/2 when true; HTTP/1.1 otherwise. */
  readonly http2?: boolean;
}

export interface GatewayResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** The negotiated protocol: 'h2' or 'http/1.1'. */
  readonly protocol: string;
  json<T = any>(): T;
}

export interface GatewayTarget {
  /** Host name the certificate is checked against. */
  readonly host: string;
  readonly port: number;
  readonly ca: string | Buffer;
}

/** Sends one request to the gateway and reads the whole response. */
export function gatewayRequest(target: GatewayTarget, req: GatewayRequest): Promise<GatewayResponse> {
  return req.http2 ? http2Request(target, req) : http1Request(target, req);
}

function response(status: number, headers: Record<string, string>, body: string, protocol: string): GatewayResponse {
  return { status, headers, body, protocol, json: () => JSON.parse(body) };
}

function flatten(raw: Record<string, string | string[] | number | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined || name.startsWith(':')) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

function http1Request(target: GatewayTarget, req: GatewayRequest): Promise<GatewayResponse> {
  return new Promise((resolve, reject) => {
    const outgoing = httpsRequest(
      {
        host: '127.0.0.1',
        servername: target.host,
        port: target.port,
        ca: target.ca,
        method: req.method ?? 'GET',
        path: req.path,
        headers: { host: `${target.host}:${target.port}`, ...req.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve(response(res.statusCode ?? 0, flatten(res.headers), Buffer.concat(chunks).toString('utf8'), 'http/1.1')),
        );
        res.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}

function http2Request(target: GatewayTarget, req: GatewayRequest): Promise<GatewayResponse> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(`https://127.0.0.1:${target.port}`, { ca: target.ca, servername: target.host });
    session.on('error', reject);
    const stream = session.request({
      [h2.HTTP2_HEADER_METHOD]: req.method ?? 'GET',
      [h2.HTTP2_HEADER_PATH]: req.path,
      ...req.headers,
    });
    let status = 0;
    let headers: Record<string, string> = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      status = Number(h[h2.HTTP2_HEADER_STATUS]);
      headers = flatten(h as Record<string, string | string[] | undefined>);
    });
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      session.close();
      resolve(response(status, headers, Buffer.concat(chunks).toString('utf8'), session.alpnProtocol ?? ''));
    });
    stream.on('error', (err) => {
      session.close();
      reject(err);
    });
    stream.end(req.body);
  });
}
