/**
 * The OpenAPI document, parsed once. It is the contract: the embedder builds its routes and
 * validation from it, and the problem catalogue below reads its `x-problem-codes` table.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const documentPath = fileURLToPath(new URL('./openapi.yaml', import.meta.url));

/** The parsed document; frozen so no consumer can mutate the shared contract. */
export const openapiDocument: Readonly<Record<string, any>> = Object.freeze(parse(readFileSync(documentPath, 'utf8')));
