// Models gw routes to, with what it charges per million tokens (exact, never rounded).
import { useState } from 'preact/hooks';
import { useLoad } from '../hooks.js';
import { exactAmount } from '../money.js';
import { Empty, ErrorNote, Loading, PageHeader } from '../ui.js';

interface ModelRow {
  readonly id: string;
  readonly vendor: string;
  readonly currency: string;
  readonly input_price_per_million_tokens: string;
  readonly output_price_per_million_tokens: string;
  readonly max_output_tokens: number;
  readonly supports_tools: boolean;
}

export function ModelsPage() {
  const models = useLoad<{ data: ModelRow[] }>('/models');
  const [filter, setFilter] = useState('');
  const shown = models.data?.data.filter((model) =>
    model.id.toLowerCase().includes(filter.trim().toLowerCase()),
  );
  return (
    <>
      <PageHeader title="Models & prices">
        What each model costs through gw, per million tokens.
      </PageHeader>
      <label class="search">
        Filter models
        <input
          type="search"
          value={filter}
          placeholder="e.g. gpt-4o"
          onInput={(event) => setFilter(event.currentTarget.value)}
        />
      </label>
      <ErrorNote error={models.error} />
      {models.loading && <Loading what="models" />}
      {shown && shown.length === 0 && <Empty>No model matches “{filter}”.</Empty>}
      {shown && shown.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Vendor</th>
                <th scope="col" class="num">
                  Input / 1M tokens
                </th>
                <th scope="col" class="num">
                  Output / 1M tokens
                </th>
                <th scope="col" class="num">
                  Max output
                </th>
                <th scope="col">Tools</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((model) => (
                <tr key={model.id}>
                  <td>
                    <code>{model.id}</code>
                  </td>
                  <td>{model.vendor}</td>
                  <td class="num">
                    {exactAmount(model.input_price_per_million_tokens)} {model.currency}
                  </td>
                  <td class="num">
                    {exactAmount(model.output_price_per_million_tokens)} {model.currency}
                  </td>
                  <td class="num">{model.max_output_tokens.toLocaleString()}</td>
                  <td>{model.supports_tools ? 'yes' : 'no'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
