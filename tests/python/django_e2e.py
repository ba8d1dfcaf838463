"""Django with its defaults on Tabula, end to end: `migrate` of the contrib apps and an app of its own
(foreign keys declared DEFERRABLE INITIALLY DEFERRED, CHECK and UNIQUE constraints, pattern-ops indexes,
ALTER COLUMN TYPE, a non-null field added to a table with rows, bulk_create through UNNEST of arrays, and
with update_conflicts by a UNIQUE field),
ORM reads and writes, the integrity errors Django reports, and the app migrated to zero and back (a
downgrade-then-upgrade cycle).

Usage: django_e2e.py PORT
"""

import os
import sys
from decimal import Decimal

os.environ["TABULA_PORT"] = sys.argv[1]
os.environ["DJANGO_SETTINGS_MODULE"] = "settings"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "django_app"))

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import Group, Permission, User  # noqa: E402
from django.contrib.contenttypes.models import ContentType  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import IntegrityError, connection, transaction  # noqa: E402
from shop.models import Product, Seller  # noqa: E402

call_command("migrate", verbosity=0)
# post_migrate's bulk_create made a content type for each model.
assert ContentType.objects.filter(app_label="shop").count() == 2, list(ContentType.objects.values_list("app_label", "model"))
assert Permission.objects.filter(content_type__app_label="shop").count() == 8

user = User.objects.create_user("ann", "ann@example.com", "pw")
group = Group.objects.create(name="staff")
user.groups.add(group)
group.permissions.add(*Permission.objects.filter(codename__startswith="add_"))
assert user.groups.count() == 1 and group.permissions.count() >= 6, group.permissions.count()
assert User.objects.get(username="ann").check_password("pw")

seller = Seller.objects.create(name="acme", rating=3)
# An upsert by a UNIQUE field, not the key: ON CONFLICT("name") DO UPDATE.
Seller.objects.bulk_create(
    [Seller(name="acme", rating=5), Seller(name="zeta", rating=1)], update_conflicts=True, unique_fields=["name"], update_fields=["rating"]
)
assert dict(Seller.objects.values_list("name", "rating")) == {"acme": 5, "zeta": 1}, list(Seller.objects.values_list("name", "rating"))
assert Seller.objects.get(name="acme").pk == seller.pk
Seller.objects.filter(name="zeta").delete()
Product.objects.bulk_create([Product(seller=seller, title=f"p{i}", price=Decimal(i), stock=i * 10) for i in range(5)])
assert Product.objects.filter(seller__name="acme").count() == 5
assert [p.title for p in Product.objects.select_related("seller").order_by("-price")[:2]] == ["p4", "p3"]
assert Product.objects.filter(title__startswith="p").count() == 5
Product.objects.filter(price__lt=2).update(stock=0)
assert sorted(Product.objects.values_list("stock", flat=True)) == [0, 0, 20, 30, 40]


def refused(make, kind):
    """`make` must fail with an IntegrityError of `kind` (its SQLSTATE class), and write nothing."""
    before = (Seller.objects.count(), Product.objects.count())
    try:
        with transaction.atomic():
            make()
    except IntegrityError as e:
        assert e.__cause__.sqlstate == kind, (e.__cause__.sqlstate, e)
        assert (Seller.objects.count(), Product.objects.count()) == before
        return e.__cause__.diag.constraint_name
    raise AssertionError(f"accepted: {make}")


assert refused(lambda: Product.objects.create(seller=seller, title="bad", price=Decimal(-1)), "23514") == "price_not_negative"
assert refused(lambda: Seller.objects.create(name="acme"), "23505") == "shop_seller_name_key"
# Foreign keys are deferred: the orphan is found at COMMIT, which Django's atomic() issues.
assert refused(lambda: Product.objects.create(seller_id=999, title="orphan", price=Decimal(1)), "23503").startswith("shop_product_seller_id")

seller.delete()  # Django deletes the products first, itself
assert Product.objects.count() == 0
user.delete()
assert not User.objects.exists()

# Down to nothing and up again.
# A migration that adds a non-null field to a table with rows.
call_command("migrate", "shop", "0002", verbosity=0)
with connection.cursor() as c:
    c.execute("INSERT INTO shop_seller (name, rating) VALUES ('before', 1)")
call_command("migrate", "shop", verbosity=0)
assert Seller.objects.get(name="before").active is True
with connection.cursor() as c:
    c.execute("SELECT is_nullable, column_default FROM information_schema.columns WHERE table_name = 'shop_seller' AND column_name = 'active'")
    assert c.fetchone() == ("NO", None)

call_command("migrate", "shop", "zero", verbosity=0)
with connection.cursor() as c:
    c.execute("SELECT count(*) FROM pg_class WHERE relname IN ('shop_seller', 'shop_product')")
    assert c.fetchone()[0] == 0
call_command("migrate", "shop", verbosity=0)
Product.objects.create(seller=Seller.objects.create(name="again"), title="x", price=Decimal("1.50"))
assert Product.objects.get().price == Decimal("1.50")
print("django: ok")
