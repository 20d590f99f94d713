/**
 * Deterministic synthetic clinical text for the benchmarks: short sentences (~20 tokens)
 * and notes (~400 tokens). Made from fixed phrase tables and a seeded generator, so every
 * run embeds the same strings; no real patient data is involved.
 */

import { seededRandom } from '../scripts/seeded-random.js';

/** The two text shapes the issue asks for. */
export type TextKind = 'short' | 'note';

const AGES = ['34', '47', '52', '58', '63', '69', '71', '76', '81', '88'];
const SEXES = ['male', 'female'];
const HISTORIES = [
  'type 2 diabetes mellitus',
  'hypertension',
  'chronic kidney disease stage 3',
  'COPD on home oxygen',
  'atrial fibrillation on apixaban',
  'coronary artery disease s/p CABG',
  'hyperlipidemia',
  'congestive heart failure with reduced ejection fraction',
  'hypothyroidism',
  'obstructive sleep apnea',
];
const COMPLAINTS = [
  'substernal chest pain radiating to the left arm',
  'progressive dyspnea on exertion',
  'fever and productive cough for three days',
  'acute onset left-sided weakness',
  'epigastric pain after meals',
  'bilateral lower extremity edema',
  'syncope while standing',
  'dysuria and flank pain',
  'confusion and decreased oral intake',
  'palpitations and lightheadedness',
];
const FINDINGS = [
  'troponin I was 0.42 ng/mL',
  'BNP was elevated at 1,240 pg/mL',
  'WBC 14.2 with left shift',
  'creatinine rose to 2.1 from a baseline of 1.3',
  'lactate was 3.1 mmol/L',
  'HbA1c 8.4%',
  'chest X-ray showed a right lower lobe infiltrate',
  'ECG showed ST depression in V4-V6',
  'CT head was negative for hemorrhage',
  'urinalysis positive for nitrites and leukocyte esterase',
];
const PLANS = [
  'start aspirin 325 mg and heparin drip',
  'continue furosemide 40 mg IV BID',
  'ceftriaxone 1 g IV daily and azithromycin 500 mg',
  'cardiology consulted for possible catheterization',
  'hold metformin, start insulin sliding scale',
  'neurology consulted, MRI brain ordered',
  'IV fluids at 100 mL/h and repeat lactate',
  'follow up in clinic in two weeks',
  'physical therapy evaluation before discharge',
  'titrate metoprolol for rate control',
];
const EXAM = [
  'Vitals: T 38.4 C, HR 112, BP 94/58, RR 22, SpO2 91% on room air.',
  'Lungs with crackles at the bases bilaterally, no wheezes.',
  'Heart irregularly irregular, no murmurs, rubs or gallops.',
  'Abdomen soft, mildly tender in the epigastrium, no rebound or guarding.',
  'Extremities with 2+ pitting edema to the mid shin.',
  'Neuro: alert and oriented x2, strength 4/5 in the left upper extremity.',
];

function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)] as T;
}

function shortSentence(rand: () => number): string {
  return `${pick(rand, AGES)} y/o ${pick(rand, SEXES)} with ${pick(rand, HISTORIES)} presenting with ${pick(rand, COMPLAINTS)}.`;
}

function noteParagraph(rand: () => number): string {
  return [
    `Patient is a ${pick(rand, AGES)} year old ${pick(rand, SEXES)} with a history of ${pick(rand, HISTORIES)} and ${pick(rand, HISTORIES)} who presents with ${pick(rand, COMPLAINTS)}.`,
    pick(rand, EXAM),
    `Labs notable for ${pick(rand, FINDINGS)}; ${pick(rand, FINDINGS)}.`,
    `Assessment and plan: ${pick(rand, PLANS)}; ${pick(rand, PLANS)}.`,
  ].join(' ');
}

/** ~400-token note: paragraphs fill a character budget (WordPiece gives ~3.4 chars/token here). */
function note(rand: () => number): string {
  const parts: string[] = [];
  let length = 0;
  for (;;) {
    const p = noteParagraph(rand);
    if (length + p.length > 1750 && parts.length > 0) break;
    parts.push(p);
    length += p.length + 1;
  }
  return parts.join(' ');
}

/** The seed of the request bodies the bench sends (embedder-service.ts's embeddingBody). */
export const BODY_SEED = 3;

/**
 * `total` texts for a baseline that must run exactly what an HTTP case sends: the `strings`
 * texts of that case's request body, repeated, so the case and its baseline run the same inputs.
 */
export function bodyTexts(kind: TextKind, strings: number, total = 256): string[] {
  const body = clinicalTexts(kind, strings, BODY_SEED);
  return Array.from({ length: total }, (_, i) => body[i % body.length]!);
}

/** `count` deterministic texts of one kind; different seeds give different (but fixed) sets. */
export function clinicalTexts(kind: TextKind, count: number, seed = 1): string[] {
  const rand = seededRandom(seed * 7919 + (kind === 'short' ? 1 : 2));
  return Array.from({ length: count }, () => (kind === 'short' ? shortSentence(rand) : note(rand)));
}
