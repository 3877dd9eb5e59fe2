import { fireEvent, render, screen } from '@testing-library/react';
import { mockApi } from '../test/fetch-mock';
import { Footer } from './Footer';

const privacyBody = '*Last updated: 4 May 2025*\n\n## Who we are\n\nHelpNow helps you. <script>alert(1)</script>';

describe('legal dialogs in the footer', () => {
  beforeEach(() => {
    mockApi({
      'GET /api/legal/privacy': { body: { slug: 'privacy', title: 'Privacy Policy', body: privacyBody } },
    });
  });

  it('shows the four legal buttons', () => {
    render(<Footer />);
    for (const name of ['Privacy Policy', 'Terms & Conditions', 'Refund Policy', 'Contact Us']) {
      expect(screen.getByRole('button', { name })).toBeTruthy();
    }
  });

  it('opens a dialog with the rendered text and closes it on Escape, giving focus back', async () => {
    render(<Footer />);
    const opener = screen.getByRole('button', { name: 'Privacy Policy' });
    opener.focus();
    fireEvent.click(opener);

    const dialog = screen.getByRole('dialog', { name: 'Privacy Policy' });
    expect(dialog.getAttribute('aria-modal')).toBe('true');
    expect(await screen.findByRole('heading', { name: 'Who we are' })).toBeTruthy();
    expect(dialog.textContent).toContain('Last updated: 4 May 2025');
    // Raw HTML in the markdown is never turned into elements.
    expect(dialog.querySelector('script')).toBeNull();
    expect(dialog.textContent).not.toContain('<script>');
    expect(dialog.contains(document.activeElement)).toBe(true);

    fireEvent.keyDown(document, { key: 'Escape' });
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(document.activeElement).toBe(opener);
  });

  it('neutralises script links in the text', async () => {
    mockApi({
      'GET /api/legal/privacy': {
        body: { slug: 'privacy', title: 'Privacy Policy', body: 'See [Click me](javascript:alert(2)).' },
      },
    });
    render(<Footer />);
    fireEvent.click(screen.getByRole('button', { name: 'Privacy Policy' }));
    const link = await screen.findByText('Click me');
    expect(link.getAttribute('href') ?? '').not.toMatch(/^\s*javascript:/i);
  });

  it('closes with the close button and on a backdrop click', async () => {
    render(<Footer />);
    fireEvent.click(screen.getByRole('button', { name: 'Privacy Policy' }));
    fireEvent.click(screen.getByRole('button', { name: 'Close' }));
    expect(screen.queryByRole('dialog')).toBeNull();

    fireEvent.click(screen.getByRole('button', { name: 'Privacy Policy' }));
    const backdrop = screen.getByTestId('modal-backdrop');
    fireEvent.mouseDown(backdrop);
    fireEvent.click(backdrop);
    expect(screen.queryByRole('dialog')).toBeNull();
  });

  it('keeps Tab inside the open dialog', async () => {
    render(<Footer />);
    fireEvent.click(screen.getByRole('button', { name: 'Privacy Policy' }));
    const close = screen.getByRole('button', { name: 'Close' });
    expect(document.activeElement).toBe(close);
    await screen.findByRole('heading', { name: 'Who we are' });

    // The close button is the only focusable element, so Tab and Shift+Tab both stay on it.
    fireEvent.keyDown(document, { key: 'Tab' });
    expect(document.activeElement).toBe(close);
    fireEvent.keyDown(document, { key: 'Tab', shiftKey: true });
    expect(document.activeElement).toBe(close);
  });

  it('says so when the text cannot be loaded', async () => {
    render(<Footer />);
    fireEvent.click(screen.getByRole('button', { name: 'Refund Policy' }));
    expect(await screen.findByRole('alert')).toBeTruthy();
    expect(screen.getByRole('dialog', { name: 'Refund Policy' })).toBeTruthy();
  });
});
