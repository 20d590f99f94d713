/**
 * The admin service's part of the image test (pod.check.ts): the identity provider it signs in
 * through (oidc-idp.mjs in a container of the network, HTTPS under a certificate for its network
 * name from the test's CA), the first owner made as deploy/README.md says, and the console's
 * session as a browser holds it: the cookie from single sign-on, and the CSRF token sent with
 * every change, from the console's own origin.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OidcWalker, type Send } from '../support/oidc-walker.js';
import { repoRoot } from '../support/stack.js';
import { type PodNetwork, podman } from './podman.js';

/** A server certificate for `name` signed by the CA in `caDir` (scripts/certs.sh's ca.pem, ca-key.pem), into `outDir` as tls.crt, tls.key. */
export function issueCertificate(caDir: string, name: string, outDir: string, uid: number): void {
  mkdirSync(outDir, { recursive: true });
  const ext = join(outDir, 'ext.cnf');
  writeFileSync(ext, `basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:${name}\n`);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl(
    'req',
    '-new',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    join(outDir, 'tls.key'),
    '-out',
    join(outDir, 'tls.csr'),
    '-subj',
    `/CN=${name}`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    join(outDir, 'tls.csr'),
    '-CA',
    join(caDir, 'ca.pem'),
    '-CAkey',
    join(caDir, 'ca-key.pem'),
    '-CAcreateserial',
    '-CAserial',
    join(outDir, 'ca.srl'),
    '-days',
    '2',
    '-sha256',
    '-extfile',
    ext,
    '-out',
    join(outDir, 'tls.crt'),
  );
  for (const file of ['tls.key', 'tls.crt']) chownSync(join(outDir, file), uid, uid);
}

/** What the identity provider needs: its network name and port, the console's client, and where its certificate is. */
export interface ProviderSpec {
  readonly name: string;
  readonly port: number;
  readonly image: string;
  readonly user: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly redirectUri: string;
  readonly tlsDir: string;
}

/**
 * Starts oidc-idp.mjs on the image's node, with the repository's node_modules (oidc-provider is
 * a test dependency, in no image) mounted read-only; returns the container's name.
 */
export function startProvider(net: PodNetwork, spec: ProviderSpec): string {
  return net.run({
    name: 'oidc',
    image: spec.image,
    user: spec.user,
    aliases: [spec.name],
    publish: [spec.port],
    entrypoint: ['node', '/idp/oidc-idp.mjs'],
    env: {
      NODE_ENV: 'test',
      IDP_ISSUER: `https://${spec.name}:${spec.port}`,
      IDP_PORT: String(spec.port),
      IDP_CLIENT_ID: spec.clientId,
      IDP_CLIENT_SECRET: spec.clientSecret,
      IDP_REDIRECT_URI: spec.redirectUri,
      IDP_TLS_DIR: '/idp/tls',
    },
    mounts: {
      [join(repoRoot, 'node_modules')]: '/idp/node_modules',
      [join(repoRoot, 'test/images/oidc-idp.mjs')]: '/idp/oidc-idp.mjs',
      [spec.tlsDir]: '/idp/tls',
    },
  });
}

/**
 * deploy/README.md's first-owner command (`kubectl -n $NS exec ctg-admin-0 -- node … admin create
 * <name> --role owner --json`), run the same way in `container` (podman exec: the container's
 * user, environment and mounts); the owner's name and first token.
 */
export function bootstrapOwner(readme: string, container: string): { name: string; token: string } {
  const command = /kubectl -n \$NS exec ctg-admin-0 -- (node admin\/src\/cli\/main\.js admin create (\S+) --role owner --json)/.exec(
    readme,
  );
  if (!command)
    throw new Error(
      'deploy/README.md shows no `kubectl exec ctg-admin-0 -- node admin/src/cli/main.js admin create … --role owner` command',
    );
  // Only while no administrator exists does the CLI act unauthenticated; it prints the owner's first token.
  const made = JSON.parse(podman(['exec', container, ...command[1]!.split(' ')])) as { name: string; token: { token: string } };
  return { name: made.name, token: made.token.token };
}

/**
 * The CLI as deploy/README.md runs it once an owner exists: `kubectl -n $NS exec -i ctg-admin-0
 * -- env ADMIN_TOKEN_FILE=/dev/stdin node …`, the token on standard input (never on a command
 * line); run the same way in `container`.
 */
export function cliWithToken(readme: string, container: string, token: string): (args: readonly string[]) => string {
  const command =
    /kubectl -n \$NS exec -i ctg-admin-0 -- (env ADMIN_TOKEN_FILE=\/dev\/stdin node admin\/src\/cli\/main\.js) [^\n]*< \S+/.exec(readme);
  if (!command)
    throw new Error('deploy/README.md shows no `kubectl exec -i ctg-admin-0 -- env ADMIN_TOKEN_FILE=/dev/stdin node …` command');
  return (args) => podman(['exec', '-i', container, ...command[1]!.split(' '), ...args], token);
}

/** A console session as the browser holds it, over `send`. */
export class ConsoleSession {
  private cookie = '';
  private csrf = '';

  constructor(
    private readonly origin: string,
    private readonly send: Send,
  ) {}

  /** Single sign-on as `login` at the provider; the session's `who` (GET /api/session). */
  async signIn(login: string): Promise<{ actor: string; role: string; via: string }> {
    const walker = new OidcWalker(this.origin, this.send);
    const landed = await walker.walk(`${this.origin}/api/oidc/start`, login);
    if (landed.search !== '') throw new Error(`single sign-on landed on ${landed.href}`);
    this.cookie = `ctg_admin=${walker.cookie(this.origin, 'ctg_admin') ?? ''}`;
    const session = await this.call('GET', '/api/session');
    if (session.status !== 200) throw new Error(`GET /api/session: ${session.status} ${JSON.stringify(session.body)}`);
    this.csrf = session.body.csrfToken;
    return session.body;
  }

  /** One admin API call as the console makes it: the cookie, and from the console's origin the CSRF token (`change` replaces headers). */
  async call(method: string, path: string, body?: unknown, change: Record<string, string> = {}): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = { cookie: this.cookie, origin: this.origin, 'sec-fetch-site': 'same-origin' };
    if (method !== 'GET') headers['x-csrf-token'] = this.csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    Object.assign(headers, change);
    const response = await this.send(new URL(path, this.origin), {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
  }
}
