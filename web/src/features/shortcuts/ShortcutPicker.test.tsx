import { fireEvent, render, screen, within } from '@testing-library/react';
import { mockApi, SHORTCUT_NAMES } from '../../test/fetch-mock';
import { ShortcutPicker } from './ShortcutPicker';
import { SELECTED_ICONS_KEY } from './selection-storage';

function tiles() {
  const grid = screen.getByRole('list', { name: /sites you can add/i });
  return within(grid).getAllByRole('button');
}

describe('ShortcutPicker', () => {
  beforeEach(() => {
    mockApi();
  });

  it('shows the first 10 sites, all 24 after Show More, and 10 again after Show Less', async () => {
    render(<ShortcutPicker onSaveFavorites={() => {}} />);

    await screen.findByRole('button', { name: 'Yahoo Mail' });
    expect(tiles().map((tile) => tile.textContent?.replace('✓', ''))).toEqual(SHORTCUT_NAMES.slice(0, 10));

    fireEvent.click(screen.getByRole('button', { name: 'Show More' }));
    expect(tiles()).toHaveLength(24);
    expect(screen.getByRole('button', { name: 'Viber' })).toBeTruthy();

    fireEvent.click(screen.getByRole('button', { name: 'Show Less' }));
    expect(tiles()).toHaveLength(10);
    expect(screen.queryByRole('button', { name: 'Viber' })).toBeNull();
  });

  it('selects a site, stores the selection under selectedIcons and offers Save Favorites', async () => {
    const onSaveFavorites = vi.fn<() => void>();
    render(<ShortcutPicker onSaveFavorites={onSaveFavorites} />);

    const gmail = await screen.findByRole('button', { name: 'Gmail' });
    expect(screen.queryByRole('button', { name: 'Save Favorites' })).toBeNull();
    expect(gmail.getAttribute('aria-pressed')).toBe('false');

    fireEvent.click(gmail);
    expect(gmail.getAttribute('aria-pressed')).toBe('true');
    expect(JSON.parse(window.localStorage.getItem(SELECTED_ICONS_KEY) ?? 'null')).toEqual(['Gmail']);

    fireEvent.click(screen.getByRole('button', { name: 'Zoom' }));
    expect(JSON.parse(window.localStorage.getItem(SELECTED_ICONS_KEY) ?? 'null')).toEqual(['Gmail', 'Zoom']);

    fireEvent.click(screen.getByRole('button', { name: 'Save Favorites' }));
    expect(onSaveFavorites).toHaveBeenCalledTimes(1);

    // Clicking a selected site again removes it; with nothing selected the button goes away.
    fireEvent.click(gmail);
    fireEvent.click(screen.getByRole('button', { name: 'Zoom' }));
    expect(JSON.parse(window.localStorage.getItem(SELECTED_ICONS_KEY) ?? 'null')).toEqual([]);
    expect(screen.queryByRole('button', { name: 'Save Favorites' })).toBeNull();
  });

  it('restores a stored selection', async () => {
    window.localStorage.setItem(SELECTED_ICONS_KEY, JSON.stringify(['YouTube']));
    render(<ShortcutPicker onSaveFavorites={() => {}} />);

    const youtube = await screen.findByRole('button', { name: 'YouTube' });
    expect(youtube.getAttribute('aria-pressed')).toBe('true');
    expect(screen.getByRole('button', { name: 'Save Favorites' })).toBeTruthy();
  });

  it('ignores stored names that are no longer on the list', async () => {
    window.localStorage.setItem(SELECTED_ICONS_KEY, JSON.stringify(['MySpace']));
    render(<ShortcutPicker onSaveFavorites={() => {}} />);

    await screen.findByRole('button', { name: 'YouTube' });
    expect(screen.queryByRole('button', { name: 'Save Favorites' })).toBeNull();
  });

  it('offers to try again when the list cannot be loaded', async () => {
    mockApi({ 'GET /api/shortcuts': { status: 500, body: { error: 'internal', message: 'Oops' } } });
    render(<ShortcutPicker onSaveFavorites={() => {}} />);

    expect(await screen.findByRole('button', { name: 'Try again' })).toBeTruthy();
  });
});
