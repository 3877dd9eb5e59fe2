import { api } from './api';

export type LegalSlug = 'privacy' | 'terms' | 'refund' | 'contact';

export const LEGAL_DOCUMENTS: ReadonlyArray<{ slug: LegalSlug; title: string }> = [
  { slug: 'privacy', title: 'Privacy Policy' },
  { slug: 'terms', title: 'Terms & Conditions' },
  { slug: 'refund', title: 'Refund Policy' },
  { slug: 'contact', title: 'Contact Us' },
];

export function legalTitle(slug: LegalSlug): string {
  return LEGAL_DOCUMENTS.find((document) => document.slug === slug)?.title ?? '';
}

export type LegalDocument = { slug: LegalSlug; title: string; body: string };

export function fetchLegalDocument(slug: LegalSlug, signal?: AbortSignal): Promise<LegalDocument> {
  return api.get<LegalDocument>(`/api/legal/${slug}`, signal);
}
