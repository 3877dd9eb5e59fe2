import { api } from '../../lib/api';
import type { LegalSlug } from './documents';

export type LegalDocument = { slug: LegalSlug; title: string; body: string };

export function fetchLegalDocument(slug: LegalSlug, signal?: AbortSignal): Promise<LegalDocument> {
  return api.get<LegalDocument>(`/api/legal/${slug}`, signal);
}
