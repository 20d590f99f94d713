/**
 * HTTP to the pod network's names from the host, as a browser on the administrators' network
 * would reach them: each origin (`https://ctg-oidc:8443`, `http://ctg-admin:9443`) is sent to the
 * port podman published for it on 127.0.0.1, with the name itself in the Host header and, over
 * TLS, as the server name the certificate is checked against. So redirects, cookies and the
 * console's origin check see exactly the names the containers use among themselves.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Send } from '../support/oidc-walker.js';

/** A Send (test/support/oidc-walker.ts) for the origins in `published` (origin -> host port), trusting `ca`. */
export function podSend(published: Readonly<Record<string, number>>, ca: string): Send {
  return (url, init) => {
    const port = published[url.origin];
    if (port === undefined) return Promise.reject(new Error(`${url.origin} is no published name of the pod network`));
    const body = init.body === undefined ? undefined : Buffer.from(init.body);
    const headers = { ...init.headers, host: url.host, ...(body ? { 'content-length': String(body.length) } : {}) };
    const options = { host: '127.0.0.1', port, path: `${url.pathname}${url.search}`, method: init.method ?? 'GET', headers };
    return new Promise<Response>((resolve, reject) => {
      const answer = (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res
          .on('data', (chunk: Buffer) => chunks.push(chunk))
          .on('error', reject)
          .on('end', () => resolve(toResponse(res, Buffer.concat(chunks))));
      };
      const req =
        url.protocol === 'https:' ? httpsRequest({ ...options, ca, servername: url.hostname }, answer) : httpRequest(options, answer);
      req.on('error', reject).end(body);
    });
  };
}

function toResponse(res: IncomingMessage, body: Buffer): Response {
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  const status = res.statusCode ?? 0;
  return new Response(status === 204 || status === 304 ? null : new Uint8Array(body), { status, headers });
}
