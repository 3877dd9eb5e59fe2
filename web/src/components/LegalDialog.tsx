import { useEffect, useState } from 'react';
import Markdown, { type Components } from 'react-markdown';
import { fetchLegalDocument, legalTitle, type LegalDocument, type LegalSlug } from '../lib/legal';
import { usePublicConfig } from '../lib/public-config';
import { Modal } from './Modal';

type LoadState =
  | { status: 'loading' }
  | { status: 'loaded'; document: LegalDocument }
  | { status: 'failed' };

// react-markdown builds React elements (never innerHTML) and drops raw HTML and unsafe URLs;
// links to other sites open in a new tab without handing it our window.
const markdownComponents: Components = {
  a: ({ href, children }) => {
    const external = href !== undefined && /^https?:/i.test(href);
    return (
      <a href={href} {...(external ? { target: '_blank', rel: 'noopener noreferrer' } : {})}>
        {children}
      </a>
    );
  },
};

export function LegalDialog({ slug, onClose }: { slug: LegalSlug; onClose: () => void }) {
  const { supportEmail } = usePublicConfig();
  const [state, setState] = useState<LoadState>({ status: 'loading' });

  useEffect(() => {
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
      {state.status === 'loading' && (
        <p className="legal-dialog__status" role="status">
          Loading…
        </p>
      )}
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
          <Markdown components={markdownComponents} skipHtml>
            {state.document.body}
          </Markdown>
        </div>
      )}
    </Modal>
  );
}
