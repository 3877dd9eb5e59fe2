import { useState } from 'react';
import { usePublicConfig } from '../lib/public-config';
import { LEGAL_DOCUMENTS, type LegalSlug } from '../lib/legal';
import { LegalDialog } from './LegalDialog';

export function Footer() {
  const { productName } = usePublicConfig();
  const [openSlug, setOpenSlug] = useState<LegalSlug | null>(null);

  return (
    <footer className="site-footer">
      <div className="site-footer__inner">
        <nav aria-label="Legal information">
          <ul className="site-footer__links">
            {LEGAL_DOCUMENTS.map(({ slug, title }) => (
              <li key={slug}>
                <button type="button" className="site-footer__link" onClick={() => setOpenSlug(slug)}>
                  {title}
                </button>
              </li>
            ))}
          </ul>
        </nav>
        <p className="site-footer__copyright">
          © {new Date().getFullYear()} {productName}. All rights reserved.
        </p>
      </div>
      {openSlug && <LegalDialog slug={openSlug} onClose={() => setOpenSlug(null)} />}
    </footer>
  );
}
