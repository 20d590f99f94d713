// The image test's identity provider: a real OpenID Connect provider (the oidc-provider package,
// as test/admin/oidc.test.ts runs it) served over HTTPS in a container on the pod network, so the
// admin container reaches it by a network name, as a cluster's admin reaches the hospital's
// provider. Plain JavaScript: it runs on the image's own node, with the repository's
// node_modules mounted read-only (test/images/pod.check.ts). Its login form takes any password;
// the login is the account, and its e-mail is that login, verified.
//   IDP_ISSUER, IDP_PORT, IDP_CLIENT_ID, IDP_CLIENT_SECRET, IDP_REDIRECT_URI, IDP_TLS_DIR (tls.crt, tls.key)
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { join } from 'node:path';
import Provider from 'oidc-provider';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const provider = new Provider(env('IDP_ISSUER'), {
  clients: [
    {
      client_id: env('IDP_CLIENT_ID'),
      client_secret: env('IDP_CLIENT_SECRET'),
      redirect_uris: [env('IDP_REDIRECT_URI')],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
  ],
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id, email: id, email_verified: true }) }),
  cookies: { keys: ['ctg-image-test-idp-cookie-key'] },
});

const tls = env('IDP_TLS_DIR');
createServer({ cert: readFileSync(join(tls, 'tls.crt')), key: readFileSync(join(tls, 'tls.key')) }, provider.callback()).listen(
  Number(env('IDP_PORT')),
  '0.0.0.0',
  () => console.log(`identity provider listening: ${env('IDP_ISSUER')}`),
);
