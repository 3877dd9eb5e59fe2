import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { mockApi } from '../../test/fetch-mock';
import type { Task } from './api';
import { TaskPanel } from './TaskPanel';

const shopping: Task = {
  id: 't1',
  name: 'Shopping',
  timestamp: '2025-05-04T10:00:00.000Z',
  items: [
    { id: 'i1', text: 'Buy milk', completed: false },
    { id: 'i2', text: 'Buy bread', completed: true },
  ],
};

const bank: Task = {
  id: 't2',
  name: 'Call the bank',
  timestamp: '2025-05-03T10:00:00.000Z',
  items: [{ id: 'i3', text: 'Find the card number', completed: false }],
};

function bodyOf(init: RequestInit | undefined): unknown {
  return JSON.parse(String(init?.body));
}

function callsTo(fetchMock: ReturnType<typeof mockApi>, method: string, path: string) {
  return fetchMock.mock.calls.filter(([url, init]) => url === path && (init?.method ?? 'GET') === method);
}

function taskCard(name: string): HTMLElement {
  const toggle = screen.getByRole('button', { name });
  const card = toggle.closest('li');
  if (!card) throw new Error(`no card for ${name}`);
  return card;
}

function renderPanel(props: Partial<Parameters<typeof TaskPanel>[0]> = {}) {
  const onAskForHelp = vi.fn<(task: Task) => void>();
  render(<TaskPanel onAskForHelp={onAskForHelp} {...props} />);
  return { onAskForHelp };
}

describe('TaskPanel', () => {
  it("lists the member's tasks under 'Your Tasks'", async () => {
    mockApi({ 'GET /api/tasks': { body: { tasks: [shopping, bank] } } });
    renderPanel();

    expect(screen.getByRole('heading', { name: 'Your Tasks' })).toBeTruthy();
    expect(screen.getByRole('status').textContent).toMatch(/loading/i);
    const list = await screen.findByRole('list', { name: 'Your Tasks' });
    const names = within(list)
      .getAllByRole('button', { expanded: false })
      .map((button) => button.textContent);
    expect(names).toEqual(['Shopping', 'Call the bank']);
    expect(within(taskCard('Shopping')).getByText('1 of 2 done')).toBeTruthy();
  });

  it('says so when there are no tasks yet', async () => {
    mockApi({ 'GET /api/tasks': { body: { tasks: [] } } });
    renderPanel();

    expect(await screen.findByText('No tasks yet. Create one to keep track of what you need to do.')).toBeTruthy();
  });

  it('offers to try again when the list cannot be loaded', async () => {
    let fail = true;
    mockApi({
      'GET /api/tasks': () =>
        fail
          ? { status: 401, body: { error: 'sign_in_required', message: 'Please sign in to continue.' } }
          : { body: { tasks: [shopping] } },
    });
    renderPanel();

    expect((await screen.findByRole('alert')).textContent).toContain('Please sign in to continue.');
    fail = false;
    fireEvent.click(screen.getByRole('button', { name: 'Try again' }));
    expect(await screen.findByRole('button', { name: 'Shopping' })).toBeTruthy();
  });

  it('creates a task with the items typed, adding rows as you type and dropping blank ones', async () => {
    const created: Task = {
      id: 't9',
      name: 'Trip',
      timestamp: '2025-05-05T10:00:00.000Z',
      items: [
        { id: 'a', text: 'Pack', completed: false },
        { id: 'b', text: 'Print tickets', completed: false },
      ],
    };
    const fetchMock = mockApi({
      'GET /api/tasks': { body: { tasks: [shopping] } },
      'POST /api/tasks': { status: 201, body: { task: created } },
    });
    renderPanel();

    fireEvent.click(await screen.findByRole('button', { name: '+ Create New Task' }));
    const name = screen.getByLabelText('Task name');
    expect(document.activeElement).toBe(name);
    expect(screen.queryByLabelText('Item 2')).toBeNull();

    fireEvent.change(name, { target: { value: 'Trip' } });
    fireEvent.change(screen.getByLabelText('Item 1'), { target: { value: 'Pack' } });
    fireEvent.change(screen.getByLabelText('Item 2'), { target: { value: 'x' } });
    fireEvent.change(screen.getByLabelText('Item 2'), { target: { value: '' } });
    fireEvent.change(screen.getByLabelText('Item 3'), { target: { value: 'Print tickets' } });
    expect(screen.getByLabelText('Item 4')).toBeTruthy();

    // Enter on a filled row moves on to the next row instead of saving.
    fireEvent.keyDown(screen.getByLabelText('Item 1'), { key: 'Enter' });
    expect(document.activeElement).toBe(screen.getByLabelText('Item 2'));

    fireEvent.click(screen.getByRole('button', { name: 'Save Task' }));

    const first = await screen.findByRole('button', { name: 'Trip' });
    expect(bodyOf(callsTo(fetchMock, 'POST', '/api/tasks')[0][1])).toEqual({
      name: 'Trip',
      items: ['Pack', 'Print tickets'],
    });
    expect(screen.queryByLabelText('Task name')).toBeNull();
    const list = screen.getByRole('list', { name: 'Your Tasks' });
    expect(within(list).getAllByRole('button', { expanded: false })[0]).toBe(first);
    // Focus returns in an effect after the form closes.
    await waitFor(() =>
      expect(document.activeElement).toBe(screen.getByRole('button', { name: '+ Create New Task' })),
    );
  });

  it('checks the name and items before sending', async () => {
    const fetchMock = mockApi({ 'GET /api/tasks': { body: { tasks: [] } } });
    renderPanel();

    fireEvent.click(await screen.findByRole('button', { name: '+ Create New Task' }));
    fireEvent.change(screen.getByLabelText('Item 1'), { target: { value: 'Pack' } });
    fireEvent.change(screen.getByLabelText('Task name'), { target: { value: '   ' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save Task' }));
    expect(screen.getByRole('alert').textContent).toBe('Please give the task a name.');
    expect(document.activeElement).toBe(screen.getByLabelText('Task name'));

    fireEvent.change(screen.getByLabelText('Task name'), { target: { value: 'Trip' } });
    fireEvent.change(screen.getByLabelText('Item 1'), { target: { value: '  ' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save Task' }));
    expect(screen.getByRole('alert').textContent).toBe('Please add at least one item.');
    expect(document.activeElement).toBe(screen.getByLabelText('Item 1'));

    expect(callsTo(fetchMock, 'POST', '/api/tasks')).toHaveLength(0);
  });

  it("shows the server's refusal and keeps what was typed", async () => {
    mockApi({
      'GET /api/tasks': { body: { tasks: [] } },
      'POST /api/tasks': {
        status: 409,
        body: {
          error: 'too_many_tasks',
          message: 'You can keep up to 500 tasks. Please delete a task you no longer need first.',
        },
      },
    });
    renderPanel();

    fireEvent.click(await screen.findByRole('button', { name: '+ Create New Task' }));
    fireEvent.change(screen.getByLabelText('Task name'), { target: { value: 'Trip' } });
    fireEvent.change(screen.getByLabelText('Item 1'), { target: { value: 'Pack' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save Task' }));

    expect((await screen.findByRole('alert')).textContent).toBe(
      'You can keep up to 500 tasks. Please delete a task you no longer need first.',
    );
    expect((screen.getByLabelText('Task name') as HTMLInputElement).value).toBe('Trip');
  });

  it('cancels the form without sending anything', async () => {
    const fetchMock = mockApi({ 'GET /api/tasks': { body: { tasks: [] } } });
    renderPanel();

    fireEvent.click(await screen.findByRole('button', { name: '+ Create New Task' }));
    fireEvent.change(screen.getByLabelText('Task name'), { target: { value: 'Trip' } });
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));

    expect(screen.queryByLabelText('Task name')).toBeNull();
    expect(document.activeElement).toBe(screen.getByRole('button', { name: '+ Create New Task' }));
    expect(callsTo(fetchMock, 'POST', '/api/tasks')).toHaveLength(0);
  });

  it('expands a task to show its items and collapses it again', async () => {
    mockApi({ 'GET /api/tasks': { body: { tasks: [shopping] } } });
    renderPanel();

    const toggle = await screen.findByRole('button', { name: 'Shopping' });
    expect(toggle.getAttribute('aria-expanded')).toBe('false');
    expect(screen.queryByRole('checkbox', { name: 'Buy milk' })).toBeNull();

    fireEvent.click(toggle);
    expect(toggle.getAttribute('aria-expanded')).toBe('true');
    expect((screen.getByRole('checkbox', { name: 'Buy milk' }) as HTMLInputElement).checked).toBe(false);
    expect((screen.getByRole('checkbox', { name: 'Buy bread' }) as HTMLInputElement).checked).toBe(true);
    expect(screen.getByPlaceholderText('Add new item...')).toBeTruthy();

    fireEvent.click(toggle);
    expect(toggle.getAttribute('aria-expanded')).toBe('false');
    expect(screen.queryByRole('checkbox', { name: 'Buy milk' })).toBeNull();
  });

  it('ticks an item on the server and shows it done as the server answers', async () => {
    const ticked: Task = { ...shopping, items: [{ ...shopping.items[0], completed: true }, shopping.items[1]] };
    const fetchMock = mockApi({
      'GET /api/tasks': { body: { tasks: [shopping] } },
      'PATCH /api/tasks/t1/items/i1': { body: { task: ticked } },
    });
    renderPanel();

    fireEvent.click(await screen.findByRole('button', { name: 'Shopping' }));
    const milk = screen.getByRole('checkbox', { name: 'Buy milk' }) as HTMLInputElement;
    fireEvent.click(milk);

    await waitFor(() => expect(within(taskCard('Shopping')).getByText('2 of 2 done')).toBeTruthy());
    expect(milk.checked).toBe(true);
    expect(milk.closest('label')?.className).toContain('tasks-item--done');
    expect(bodyOf(callsTo(fetchMock, 'PATCH', '/api/tasks/t1/items/i1')[0][1])).toEqual({ completed: true });
  });

  it('puts the tick back and says why when the server refuses it', async () => {
    mockApi({
      'GET /api/tasks': { body: { tasks: [shopping] } },
      'PATCH /api/tasks/t1/items/i1': { status: 404, body: { error: 'not_found', message: 'Task not found.' } },
    });
    renderPanel();

    fireEvent.click(await screen.findByRole('button', { name: 'Shopping' }));
    const milk = screen.getByRole('checkbox', { name: 'Buy milk' }) as HTMLInputElement;
    fireEvent.click(milk);

    expect((await screen.findByRole('alert')).textContent).toBe('Task not found.');
    expect(milk.checked).toBe(false);
  });

  it('adds an item with Enter, and refuses a blank one', async () => {
    const withEggs: Task = { ...shopping, items: [...shopping.items, { id: 'i9', text: 'Eggs', completed: false }] };
    const fetchMock = mockApi({
      'GET /api/tasks': { body: { tasks: [shopping] } },
      'POST /api/tasks/t1/items': { status: 201, body: { task: withEggs } },
    });
    renderPanel();

    fireEvent.click(await screen.findByRole('button', { name: 'Shopping' }));
    const field = screen.getByPlaceholderText('Add new item...') as HTMLInputElement;
    expect(screen.getByLabelText('New item for Shopping')).toBe(field);

    fireEvent.click(within(taskCard('Shopping')).getByRole('button', { name: /^Add/ }));
    expect(screen.getByRole('alert').textContent).toBe('Please type the item first.');

    fireEvent.change(field, { target: { value: ' Eggs ' } });
    fireEvent.submit(field.form as HTMLFormElement);

    expect(await screen.findByRole('checkbox', { name: 'Eggs' })).toBeTruthy();
    expect(field.value).toBe('');
    expect(screen.queryByRole('alert')).toBeNull();
    expect(callsTo(fetchMock, 'POST', '/api/tasks/t1/items').map(([, init]) => bodyOf(init))).toEqual([
      { text: 'Eggs' },
    ]);
  });

  it('deletes a task only after the member confirms', async () => {
    const fetchMock = mockApi({ 'GET /api/tasks': { body: { tasks: [shopping, bank] } } });
    // The shared mock always sends a JSON body, which a 204 answer cannot have.
    const deleted: string[] = [];
    vi.stubGlobal('fetch', async (input: RequestInfo | URL, init?: RequestInit) => {
      if (init?.method !== 'DELETE') return fetchMock(input, init);
      deleted.push(String(input));
      return new Response(null, { status: 204 });
    });
    renderPanel();

    fireEvent.click(await screen.findByRole('button', { name: 'Delete Shopping' }));
    let dialog = screen.getByRole('dialog');
    expect(within(dialog).getByText('Are you sure you want to delete "Shopping"?')).toBeTruthy();
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(screen.getByRole('button', { name: 'Shopping' })).toBeTruthy();
    expect(deleted).toEqual([]);

    fireEvent.click(screen.getByRole('button', { name: 'Delete Shopping' }));
    dialog = screen.getByRole('dialog');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Delete' }));

    await waitFor(() => expect(screen.queryByRole('button', { name: 'Shopping' })).toBeNull());
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(screen.getByRole('button', { name: 'Call the bank' })).toBeTruthy();
    expect(deleted).toEqual(['/api/tasks/t1']);
  });

  it('asks the assistant about the chosen task', async () => {
    mockApi({ 'GET /api/tasks': { body: { tasks: [shopping, bank] } } });
    const { onAskForHelp } = renderPanel();

    fireEvent.click(await screen.findByRole('button', { name: 'Get AI assistance with Call the bank' }));
    expect(onAskForHelp).toHaveBeenCalledWith(bank);
  });

  it('disables the assistance button when help is switched off', async () => {
    mockApi({ 'GET /api/tasks': { body: { tasks: [shopping] } } });
    renderPanel({ helpDisabled: true });

    const ask = (await screen.findByRole('button', { name: 'Get AI assistance with Shopping' })) as HTMLButtonElement;
    expect(ask.disabled).toBe(true);
  });
});
