/**
 * The auditor's check of an export file, offline: nothing but the file, the published public
 * key and the auditor's earlier exports. No settings, no Redis, no audit secret are read, so
 * the CLI runs it before loading any (cli/audit.ts).
 */
import { readFileSync } from 'node:fs';
import { verifyExportFile, type ExportVerdict } from '../audit/export-file.js';
import { publicKeyFromPem } from '../audit/signing.js';
import { invalid } from './errors.js';

/** Verifies `file` with the public keys in `keyFiles` (PEM), against the `earlier` exports. */
export async function verifyAuditFile(file: string, keyFiles: readonly string[], earlier: readonly string[]): Promise<ExportVerdict> {
  if (keyFiles.length === 0) throw invalid('--public-key', "the trail's published public key (PEM file) is required");
  const keys = keyFiles.map((path) => {
    try {
      return publicKeyFromPem(readFileSync(path, 'utf8'));
    } catch (error) {
      throw invalid('--public-key', `${path}: ${(error as Error).message}`);
    }
  });
  return verifyExportFile(file, keys, earlier);
}
