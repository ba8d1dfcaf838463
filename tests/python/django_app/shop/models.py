from django.db import models


class Seller(models.Model):
    name = models.CharField(max_length=100, unique=True)
    rating = models.PositiveSmallIntegerField(default=0)
    active = models.BooleanField(default=True)


class Product(models.Model):
    seller = models.ForeignKey(Seller, on_delete=models.CASCADE, related_name="products")
    title = models.CharField(max_length=300, db_index=True)
    price = models.DecimalField(max_digits=10, decimal_places=2)
    stock = models.IntegerField(null=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=models.Q(price__gte=0), name="price_not_negative")]
        indexes = [models.Index(fields=["seller", "price"], name="product_seller_price")]
