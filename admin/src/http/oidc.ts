/**
 * Sign-in through an OpenID Connect provider with openid-client: the authorization code flow
 * with PKCE, state and nonce. The pending sign-in (verifier, state, nonce) waits in Redis under
 * a random id in a short-lived cookie, and is used once. The provider's verified e-mail address
 * names the administrator: it must be a registered, enabled administrator of that name.
 */
import { randomBytes } from 'node:crypto';
import * as client from 'openid-client';
import type { SessionStore } from '../store/sessions.js';
import type { OidcSettings } from '../config.js';

export const PENDING_COOKIE = 'ctg_oidc';
const PENDING_TTL_MS = 10 * 60_000;
const CALLBACK_PATH = '/api/oidc/callback';

/** Why a callback did not yield an identity (shown to the person, audited with the identity tried, when the provider named one). */
export class OidcRefusal extends Error {
  constructor(
    readonly reason: string,
    /** The e-mail (or `sub:<subject>`) the provider answered with, or null. */
    readonly identity: string | null = null,
  ) {
    super(reason);
    this.name = 'OidcRefusal';
  }
}

/** What a provider said, fit for the audit trail: at most 254 characters, no control characters. */
function identityOf(claims: Record<string, unknown>): string | null {
  const raw = typeof claims.email === 'string' ? claims.email.toLowerCase() : typeof claims.sub === 'string' ? `sub:${claims.sub}` : null;
  return raw === null ? null : raw.replace(/\p{Cc}/gu, '').slice(0, 254);
}

// Plain HTTP only for a provider on this machine (a test's, or a developer's).
const isLoopback = (url: URL): boolean => ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);

export class OidcSignIn {
  private configuration: Promise<client.Configuration> | null = null;

  constructor(
    private readonly settings: OidcSettings,
    private readonly store: SessionStore,
  ) {}

  private config(): Promise<client.Configuration> {
    if (!this.configuration) {
      const issuer = new URL(this.settings.issuer);
      const options = issuer.protocol === 'http:' && isLoopback(issuer) ? { execute: [client.allowInsecureRequests] } : undefined;
      this.configuration = client.discovery(issuer, this.settings.clientId, this.settings.clientSecret, undefined, options);
      // A provider that was down is asked again next time.
      this.configuration.catch(() => {
        this.configuration = null;
      });
    }
    return this.configuration;
  }

  /** Starts a sign-in: the provider URL to redirect to and the pending cookie to set. */
  async start(): Promise<{ location: string; cookie: string }> {
    const config = await this.config();
    const verifier = client.randomPKCECodeVerifier();
    const pending = { verifier, state: client.randomState(), nonce: client.randomNonce() };
    const id = randomBytes(32).toString('base64url');
    await this.store.putPending(id, pending, PENDING_TTL_MS);
    const location = client.buildAuthorizationUrl(config, {
      redirect_uri: `${this.settings.publicUrl}${CALLBACK_PATH}`,
      scope: 'openid email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    return { location: location.href, cookie: this.cookie(id) };
  }

  /** Finishes a sign-in from the provider's redirect; the verified e-mail, lower-cased. */
  async finish(url: string, pendingId: string | undefined): Promise<string> {
    const pending = pendingId && /^[\w-]{43}$/.test(pendingId) ? await this.store.takePending(pendingId) : null;
    if (!pending) throw new OidcRefusal('no_pending_sign_in');
    const config = await this.config();
    let claims: Record<string, unknown>;
    try {
      const tokens = await client.authorizationCodeGrant(config, new URL(url, this.settings.publicUrl), {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      const idToken = tokens.claims()!;
      // Many providers put e-mail only in the UserInfo answer; it is bound to the ID token's subject.
      claims = typeof idToken.email === 'string' ? idToken : await client.fetchUserInfo(config, tokens.access_token, idToken.sub);
    } catch {
      throw new OidcRefusal('provider_answer_refused');
    }
    if (typeof claims.email !== 'string' || claims.email_verified !== true) throw new OidcRefusal('no_verified_email', identityOf(claims));
    return claims.email.toLowerCase();
  }

  /** The pending cookie (Lax: it must come back on the provider's cross-site redirect), or its deletion. */
  cookie(id: string | null): string {
    const secure = this.settings.publicUrl.startsWith('https:') ? '; Secure' : '';
    return `${PENDING_COOKIE}=${id ?? ''}; Path=/api/oidc; HttpOnly; SameSite=Lax; Max-Age=${id ? PENDING_TTL_MS / 1000 : 0}${secure}`;
  }
}
