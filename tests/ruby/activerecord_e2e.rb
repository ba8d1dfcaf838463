# Rails' ActiveRecord (Debian's ruby-activerecord, with ruby-pg) with its defaults against Tabula:
# migrations from files run by the migration context (schema_migrations, ar_internal_metadata), models
# with associations, validations and the errors of constraints, transactions, and a migration down to
# nothing and up again. Usage: ruby activerecord_e2e.rb PORT
require 'active_record'
require 'tmpdir'

port = Integer(ARGV.fetch(0))
ActiveRecord::Base.establish_connection(adapter: 'postgresql', host: '127.0.0.1', port: port,
                                        username: 'tabula', database: 'tabula')
ActiveRecord::Migration.verbose = false

def check(what, got, want)
  raise "#{what}: expected #{want.inspect}, got #{got.inspect}" unless got == want
end

MIGRATIONS = {
  '20260101000001_create_authors.rb' => <<~RUBY,
    class CreateAuthors < ActiveRecord::Migration[6.1]
      def change
        create_table :authors do |t|
          t.string :name, null: false
          t.integer :born
          t.timestamps
        end
        add_index :authors, :name, unique: true
      end
    end
  RUBY
  '20260101000002_create_books.rb' => <<~RUBY,
    class CreateBooks < ActiveRecord::Migration[6.1]
      def change
        create_table :books do |t|
          t.references :author, null: false, foreign_key: { on_delete: :cascade }
          t.string :title, null: false
          t.decimal :price, precision: 8, scale: 2
          t.boolean :in_print, default: true, null: false
          t.jsonb :details
          t.timestamps
        end
      end
    end
  RUBY
  '20260101000003_rename_born.rb' => <<~RUBY,
    class RenameBorn < ActiveRecord::Migration[6.1]
      def change
        rename_column :authors, :born, :born_in
        add_column :authors, :country, :string, default: 'unknown'
      end
    end
  RUBY
}

class Author < ActiveRecord::Base
  has_many :books, dependent: :destroy
  validates :name, presence: true
end

class Book < ActiveRecord::Base
  belongs_to :author
end

def tables
  ActiveRecord::Base.connection.tables.sort
end

Dir.mktmpdir do |dir|
  MIGRATIONS.each { |name, body| File.write(File.join(dir, name), body) }
  context = ActiveRecord::MigrationContext.new(dir, ActiveRecord::SchemaMigration)
  context.migrate
  check('tables', tables, %w[ar_internal_metadata authors books schema_migrations])
  check('version', context.current_version, 20260101000003)
  check('columns', Author.connection.columns('authors').map(&:name), %w[id name born_in created_at updated_at country])
  Author.reset_column_information

  # Models, associations, defaults.
  ursula = Author.create!(name: 'Ursula', born_in: 1929)
  check('default', ursula.reload.country, 'unknown')
  ursula.books.create!(title: 'The Dispossessed', price: BigDecimal('12.5'), details: { 'pages' => 387 })
  ursula.books.create!(title: 'Lavinia', in_print: false)
  octavia = Author.create!(name: 'Octavia', born_in: 1947)
  octavia.books.create!(title: 'Kindred', price: 9.99)
  check('count', Book.count, 3)
  check('price', Book.find_by(title: 'The Dispossessed').price, BigDecimal('12.50'))
  check('jsonb', Book.find_by(title: 'The Dispossessed').details, { 'pages' => 387 })
  check('join', Book.joins(:author).where(authors: { name: 'Octavia' }).pluck(:title), ['Kindred'])
  check('includes', Author.includes(:books).order(:name).map { |a| [a.name, a.books.map(&:title).sort] },
        [['Octavia', ['Kindred']], ['Ursula', ['Lavinia', 'The Dispossessed']]])
  check('group', Book.group(:in_print).count, { true => 2, false => 1 })
  Book.where(in_print: false).update_all(price: 5)
  check('update_all', Book.find_by(title: 'Lavinia').price, BigDecimal('5'))

  # Constraints surface as ActiveRecord's errors.
  begin
    Author.create!(name: 'Ursula')
    raise 'a duplicate name was accepted'
  rescue ActiveRecord::RecordNotUnique
  end
  begin
    Book.create!(author_id: 424242, title: 'orphan')
    raise 'a book without its author was accepted'
  rescue ActiveRecord::RecordInvalid, ActiveRecord::InvalidForeignKey
  end
  begin
    Book.new(author: octavia).save!(validate: false)
    raise 'a NULL title was accepted'
  rescue ActiveRecord::NotNullViolation
  end

  # A transaction that raises is undone.
  begin
    Author.transaction do
      Author.create!(name: 'Someone')
      raise ActiveRecord::Rollback
    end
  end
  check('rolled back', Author.where(name: 'Someone').count, 0)

  # dependent: :destroy, and ON DELETE CASCADE underneath.
  ursula.destroy
  check('destroyed', Book.pluck(:title), ['Kindred'])
  Author.connection.execute("DELETE FROM authors WHERE name = 'Octavia'")
  check('cascade', Book.count, 0)

  # Down to nothing, up again.
  context.rollback(3)
  check('rolled back tables', tables, %w[ar_internal_metadata schema_migrations])
  context.migrate
  check('again', tables, %w[ar_internal_metadata authors books schema_migrations])
end
puts 'activerecord: migrations, models, constraints, transactions, rollback and migrate again: ok'
