// Models gw routes to, with what it charges per million tokens (exact, never rounded).
import { useState } from 'preact/hooks';
import { useLoad } from '../hooks.js';
import { exactAmount } from '../money.js';
import { ListTable, PageHeader } from '../ui.js';

interface ModelRow {
  readonly id: string;
  readonly vendor: string;
  readonly currency: string;
  readonly input_price_per_million_tokens: string;
  readonly output_price_per_million_tokens: string;
  readonly cache_write_price_per_million_tokens: string;
  readonly cache_write_1h_price_per_million_tokens: string;
  readonly cache_read_price_per_million_tokens: string;
  readonly max_output_tokens: number;
  readonly supports_tools: boolean;
}

export function ModelsPage() {
  const models = useLoad<{ data: ModelRow[] }>('/models');
  const [filter, setFilter] = useState('');
  const needle = filter.trim().toLowerCase();
  // Every price is in the settlement currency: named once, above the table.
  const currency = models.data?.data[0]?.currency ?? 'USD';
  const shown = models.data
    ? models.data.data.filter((model) => model.id.toLowerCase().includes(needle))
    : null;
  return (
    <>
      <PageHeader title="Models & prices">
        What each model costs through gw per million tokens, in {currency}. Prompt tokens the vendor
        writes to or reads from its prompt cache are charged at the cache rates.
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
      <ListTable
        list={models}
        rows={shown}
        what="models"
        empty={`No model matches “${filter}”.`}
        rowKey={(model) => model.id}
        columns={[
          { header: 'Model', cell: (model) => <code>{model.id}</code> },
          { header: 'Vendor', cell: (model) => model.vendor },
          {
            header: 'Input / 1M',
            numeric: true,
            cell: (model) => exactAmount(model.input_price_per_million_tokens),
          },
          {
            header: 'Output / 1M',
            numeric: true,
            cell: (model) => exactAmount(model.output_price_per_million_tokens),
          },
          {
            header: 'Cache write / 1M (5 min · 1 h)',
            numeric: true,
            cell: (model) =>
              `${exactAmount(model.cache_write_price_per_million_tokens)} · ${exactAmount(
                model.cache_write_1h_price_per_million_tokens,
              )}`,
          },
          {
            header: 'Cache read / 1M',
            numeric: true,
            cell: (model) => exactAmount(model.cache_read_price_per_million_tokens),
          },
          {
            header: 'Max output',
            numeric: true,
            cell: (model) => model.max_output_tokens.toLocaleString(),
          },
          { header: 'Tools', cell: (model) => (model.supports_tools ? 'yes' : 'no') },
        ]}
      />
    </>
  );
}
