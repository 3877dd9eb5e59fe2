import { api, apiRequest } from '../../lib/api';

export type TaskItem = { id: string; text: string; completed: boolean };
export type Task = { id: string; name: string; timestamp: string; items: TaskItem[] };

type TaskAnswer = { task: Task };

function taskPath(taskId: string): string {
  return `/api/tasks/${encodeURIComponent(taskId)}`;
}

/** Every change answers with the whole task as stored, so the screen never guesses at the result. */
export const tasksApi = {
  list: async (signal?: AbortSignal): Promise<Task[]> => (await api.get<{ tasks: Task[] }>('/api/tasks', signal)).tasks,
  create: async (name: string, items: string[]): Promise<Task> =>
    (await api.post<TaskAnswer>('/api/tasks', { name, items })).task,
  addItem: async (taskId: string, text: string): Promise<Task> =>
    (await api.post<TaskAnswer>(`${taskPath(taskId)}/items`, { text })).task,
  setItemCompleted: async (taskId: string, itemId: string, completed: boolean): Promise<Task> =>
    (
      await apiRequest<TaskAnswer>(`${taskPath(taskId)}/items/${encodeURIComponent(itemId)}`, {
        method: 'PATCH',
        body: { completed },
      })
    ).task,
  remove: async (taskId: string): Promise<void> => {
    await apiRequest<null>(taskPath(taskId), { method: 'DELETE' });
  },
};
