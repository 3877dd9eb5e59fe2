import { useState } from 'react';
import { usePublicConfig } from '../../lib/public-config';
import { LegalDialog } from '../../components/LegalDialog';
import { LEGAL_DOCUMENTS, type LegalSlug } from '../../lib/legal';

/** The chat funnel's own footer (the app's is off on these routes): the four legal dialogs. */
export function FunnelFooter() {
  const { productName } = usePublicConfig();
  const [openSlug, setOpenSlug] = useState<LegalSlug | null>(null);

  return (
    <footer className="funnel-footer">
      <nav aria-label="Legal information">
        <ul className="funnel-footer__links">
          {LEGAL_DOCUMENTS.map(({ slug, title }) => (
            <li key={slug}>
              <button type="button" className="funnel-footer__link" onClick={() => setOpenSlug(slug)}>
                {title}
              </button>
            </li>
          ))}
        </ul>
      </nav>
      <p className="funnel-footer__copyright">
        © {new Date().getFullYear()} {productName}. All rights reserved.
      </p>
      {openSlug && <LegalDialog slug={openSlug} onClose={() => setOpenSlug(null)} />}
    </footer>
  );
}
