import { lazy, Suspense, useEffect, useState } from 'react';
import { fetchLegalDocument, legalTitle, type LegalDocument, type LegalSlug } from '../lib/legal';
import { usePublicConfig } from '../lib/public-config';
import { Modal } from './Modal';

type LoadState =
  | { status: 'loading' }
  | { status: 'loaded'; document: LegalDocument }
  | { status: 'failed' };

// The markdown renderer loads with the first dialog, not with every page.
const loadLegalText = () => import('./LegalText');
const LegalText = lazy(() => loadLegalText().then(({ LegalText }) => ({ default: LegalText })));

const loading = (
  <p className="legal-dialog__status" role="status">
    Loading…
  </p>
);

export function LegalDialog({ slug, onClose }: { slug: LegalSlug; onClose: () => void }) {
  const { supportEmail } = usePublicConfig();
  const [state, setState] = useState<LoadState>({ status: 'loading' });

  useEffect(() => {
    loadLegalText().catch(() => {}); // beside the text's request, not after it
    const controller = new AbortController();
    setState({ status: 'loading' });
    fetchLegalDocument(slug, controller.signal)
      .then((document) => setState({ status: 'loaded', document }))
      .catch(() => {
        if (!controller.signal.aborted) setState({ status: 'failed' });
      });
    return () => controller.abort();
  }, [slug]);

  const title = state.status === 'loaded' ? state.document.title : legalTitle(slug);

  return (
    <Modal title={title} onClose={onClose} size="wide" className="legal-dialog">
      {state.status === 'loading' && loading}
      {state.status === 'failed' && (
        <p className="legal-dialog__status" role="alert">
          Sorry, we couldn't load this page right now. Please try again in a moment
          {supportEmail ? (
            <>
              {' '}
              or email us at <a href={`mailto:${supportEmail}`}>{supportEmail}</a>
            </>
          ) : null}
          .
        </p>
      )}
      {state.status === 'loaded' && (
        <div className="legal-dialog__text">
          <Suspense fallback={loading}>
            <LegalText body={state.document.body} />
          </Suspense>
        </div>
      )}
    </Modal>
  );
}
