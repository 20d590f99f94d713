/** Reading the import graph from source text, for the tests that guard folder boundaries. */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Every .ts/.js/.mjs file under `dir`, recursively, node_modules left out. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|js|mjs)$/.test(name) ? [path] : [];
  });
}

/** Every relative path a file names: static and dynamic imports, re-exports, `new URL(…, import.meta.url)`. */
export function referencedPaths(text: string): string[] {
  const patterns = [
    /\b(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
    /new URL\(\s*['"]([^'"]+)['"]\s*,\s*import\.meta\.url\s*\)/g,
  ];
  return patterns.flatMap((p) => [...text.matchAll(p)].map((m) => m[1]!)).filter((s) => s.startsWith('.'));
}
