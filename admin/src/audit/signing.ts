/**
 * The trail's Ed25519 key (node:crypto). The private key is derived from the audit secret
 * (AUDIT_SECRET[_FILE], never in Redis): whoever holds it can sign, so only it can extend or
 * rewrite the trail unnoticed. The public key is published (GET /api/audit/public-key, `audit
 * public-key`, every export's first line): with it alone an auditor checks every signature.
 */
import { createHash, createHmac, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

// PKCS#8 DER of an Ed25519 private key is this fixed prefix followed by the 32-byte seed.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
/** The longest public-key file we read: a PEM of an Ed25519 key is about 113 bytes. */
const MAX_PEM = 4096;

/** Signs statements with the trail's private key. */
export interface AuditSigner {
  /** The signature of `statement`, base64url. */
  sign(statement: Buffer): string;
  readonly publicKey: KeyObject;
}

/** The signer whose private key is derived from `secret` (stable: the same secret, the same key). */
export function signerFromSecret(secret: string): AuditSigner {
  const seed = createHmac('sha256', secret).update('ctg-audit-signing-key-v1').digest();
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey(privateKey);
  return { sign: (statement) => sign(null, statement, privateKey).toString('base64url'), publicKey };
}

/** The public key as PEM (SPKI), as published. */
export function publicKeyPem(key: KeyObject): string {
  return String(key.export({ type: 'spki', format: 'pem' }));
}

/** `sha256:<hex>` of the raw public key: what an auditor compares over the telephone. */
export function fingerprint(key: KeyObject): string {
  return `sha256:${createHash('sha256')
    .update(key.export({ type: 'spki', format: 'der' }))
    .digest('hex')}`;
}

/** Reads an Ed25519 public key from PEM text; a fault (thrown) when it is not one. */
export function publicKeyFromPem(pem: string): KeyObject {
  if (pem.length > MAX_PEM) throw new Error('not an Ed25519 public key (too long)');
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch {
    throw new Error('not a PEM public key');
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`not an Ed25519 public key (${key.asymmetricKeyType})`);
  return key;
}

/** True when `sig` (base64url) is a signature of `statement` by one of `keys`. */
export function signedBy(keys: readonly KeyObject[], statement: Buffer, sig: unknown): boolean {
  if (typeof sig !== 'string' || !/^[\w-]{86}$/.test(sig)) return false;
  const bytes = Buffer.from(sig, 'base64url');
  return keys.some((key) => verify(null, statement, key, bytes));
}
