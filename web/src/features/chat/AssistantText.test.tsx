import { render, screen } from '@testing-library/react';
import { AssistantText } from './AssistantText';

describe('AssistantText', () => {
  it('renders lists, code and links, which open in a new tab on their own', () => {
    const { container } = render(
      <AssistantText
        text={'Try this:\n\n1. Open **Settings**\n2. Choose `Wi-Fi`\n\n- see [the guide](https://example.com/guide)'}
      />,
    );
    expect(screen.getAllByRole('listitem').map((item) => item.textContent)).toEqual([
      'Open Settings',
      'Choose Wi-Fi',
      'see the guide',
    ]);
    expect(container.querySelector('ol')).not.toBeNull();
    expect(container.querySelector('code')?.textContent).toBe('Wi-Fi');
    const link = screen.getByRole('link', { name: 'the guide' });
    expect(link.getAttribute('href')).toBe('https://example.com/guide');
    expect(link.getAttribute('target')).toBe('_blank');
    expect(link.getAttribute('rel')).toBe('noopener noreferrer');
  });

  it('shows HTML as text and unsafe links as plain text', () => {
    const { container } = render(
      <AssistantText text={'Look: <img src=x onerror="alert(1)"> and [click](javascript:alert(1))'} />,
    );
    expect(container.querySelector('img')).toBeNull();
    expect(container.textContent).toContain('<img src=x onerror="alert(1)">');
    expect(container.querySelector('a')).toBeNull();
    expect(container.textContent).toContain('and click');
  });

  it('keeps http, https and mailto links only', () => {
    const { container } = render(
      <AssistantText
        text={[
          '[web](http://example.com/a)',
          '[secure](HTTPS://example.com/b)',
          '[mail us](mailto:help@example.com)',
          '[data](data:text/html;base64,PHNjcmlwdD4=)',
          '[relative](/account/delete)',
          '[phone](tel:+15555550100)',
          '[spaced]( javascript:alert(1))',
        ].join(' ')}
      />,
    );
    expect(screen.getAllByRole('link').map((link) => [link.textContent, link.getAttribute('href')])).toEqual([
      ['web', 'http://example.com/a'],
      ['secure', 'HTTPS://example.com/b'],
      ['mail us', 'mailto:help@example.com'],
    ]);
    expect(container.textContent).toContain('data relative phone spaced');
  });

  it('shows no images, not even from a safe address, but their alt text', () => {
    const { container } = render(
      <AssistantText
        text={'Here: ![the settings screen](https://example.com/settings.png) and [![logo](https://example.com/l.png)](https://example.com)'}
      />,
    );
    expect(container.querySelector('img')).toBeNull();
    expect(container.textContent).toBe('Here: the settings screen and logo');
    // A link around an image stays a link, named by the image's alt text.
    expect(screen.getByRole('link', { name: 'logo' }).getAttribute('href')).toBe('https://example.com');
  });
});
