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

  it('shows HTML as text and drops unsafe links', () => {
    const { container } = render(
      <AssistantText text={'Look: <img src=x onerror="alert(1)"> and [click](javascript:alert(1))'} />,
    );
    expect(container.querySelector('img')).toBeNull();
    expect(container.textContent).toContain('<img src=x onerror="alert(1)">');
    expect(container.querySelector('a')?.getAttribute('href') ?? '').not.toContain('javascript');
  });
});
